"""Structured broker overlays: SCOT with OctopiA routing, and a PADRES-style baseline (pure cores)."""
