"""Leaderboards: many runs on their shared samples, with rank intervals and tiers."""
