"""What the plugin keeps on disk for people: the baseline store and atomic file writes."""
