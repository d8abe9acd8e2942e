"""The game pages: lobby, new game, a game, its moves, its record and the rules."""
