"""Tests of the repository as a whole rather than of one module: layout, docs, packaging, the CI recipe."""
