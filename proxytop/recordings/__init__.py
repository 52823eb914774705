"""Recordings of what the engine read, and their replay with a playback clock."""
