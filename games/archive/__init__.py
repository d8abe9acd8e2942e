"""Finished games to browse: reads, filters, results, replays, records, feeds and
player pages."""
