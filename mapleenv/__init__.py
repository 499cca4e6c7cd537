"""Maple environment side: Showdown servers, battle env, encoding, reward, opponents."""
