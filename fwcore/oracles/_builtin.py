"""Imports every module that registers oracles (one line per module)."""
