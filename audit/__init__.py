"""Interception records (payload-free), governance events, search, export, retention."""
