from django.apps import AppConfig


class GamesConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "games"

    def ready(self) -> None:
        # Each pace registers itself with the play core when imported (games/play/pacing.py);
        # the accounts' signals forget a changed user's cached copy and keep the key of their
        # name, in every process that writes.
        from games.accounts import backends, profiles  # noqa: F401
        from games.play.paces import race, turns  # noqa: F401
