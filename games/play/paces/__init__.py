"""How a game's moves are timed: by turns, or a live race on its own clock."""
