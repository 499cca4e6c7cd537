"""What the encoders share: game data (dex, vocab), damage and threat estimates, futile
moves, random-battle sets, and the entity layouts (layout.py)."""
