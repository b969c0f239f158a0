"""Files for people: baselines, their entries and sessions, history and trends, results, schemas, profiles.

Everything the plugin writes to disk or reads back (atomically written, validated against
:mod:`.schema`), and the hardware profile that names a baseline file.
"""
