"""Tests for batchviz."""
