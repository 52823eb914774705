"""Collectors: each owns one data source and returns frozen snapshots. No UI code here."""
