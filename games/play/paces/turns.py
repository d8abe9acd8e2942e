"""The pace "by turns": the engine says who is to move; a bot's turn is a task queued when the
turn starts. Every game is timed so unless another pace claims it (a live race)."""

from __future__ import annotations

from games import queueing
from games.engines import get_engine
from games.models import Game
from games.play import pacing


class Turns(pacing.Pace):
    name = "turns"

    def after_commit(self, game: Game) -> None:
        """The bot turn, if a bot is to move: queued once the move commits. A broker that is
        down is logged, not raised: the sweep picks up the lost bot turn."""
        if not pacing.bot_tasks_queued() or game.status != Game.Status.ACTIVE:
            return
        if game.state is None:
            return
        to_move = set(get_engine(game.kind).to_move(game.state))
        # `game.seats.all()`: the seats the move read (play.core.seats_read), no query more.
        if any(s.bot and s.index in to_move for s in game.seats.all()):
            queueing.queue_on_commit(queueing.BOT_TURN, [(game.pk, game.ply)])


TURNS = pacing.register(Turns(), default=True)
