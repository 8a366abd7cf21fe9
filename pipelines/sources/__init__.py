"""Source readers and parsers (no Beam pipeline): each turns one format into records or dead letters."""
