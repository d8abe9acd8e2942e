"""The write path: every change to a game (lock, check, apply, record, end), its paces
and its deadlines and sweeps."""
