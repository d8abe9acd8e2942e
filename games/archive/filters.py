"""The archive's filters: the form on the archive and player pages, and the filters it gives
the reads (reads.py) and the feeds."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from html import escape
from typing import Any

from django import forms
from django.utils.safestring import SafeString, mark_safe

from games.bots import all_levels
from games.models import Clock, Game, bot_level_named, bot_name
from games.ui.wording import listed

# --- filters ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Filters:
    """What the visitor asked for. Every field is optional; they combine with AND."""

    kind: str = ""
    player: str = ""  # a username (guests' contain a space), or a bot's name (models.bot_name)
    result: str = ""  # "won" or "lost", by `player`
    clock: str = ""  # a Clock value
    bots: str = ""  # "yes": a bot sat in the game; "no": people only
    since: date | None = None  # finished on or after this day (UTC)
    until: date | None = None  # finished on or before this day (UTC)

    def query(self, *, player: bool = True) -> dict[str, str]:
        """The filters as URL parameters, without the empty ones."""
        params = {
            "game": self.kind,
            "player": self.player if player else "",
            "result": self.result,
            "clock": self.clock,
            "bots": self.bots,
            "from": self.since.isoformat() if self.since else "",
            "to": self.until.isoformat() if self.until else "",
        }
        return {k: v for k, v in params.items() if v}

    @property
    def any(self) -> bool:
        return bool(self.query())

    @property
    def bot(self) -> str:
        """The bot's level, when the player is a bot; "" for a person."""
        return bot_level_named(self.player) or ""


class FilterForm(forms.Form):
    """The filter form, read from the query string. A bad value is dropped with a message, not
    turned into an error page: a shared link stays usable."""

    game = forms.ChoiceField(
        choices=[("", "any game"), *Game.Kind.choices], required=False, label="Game"
    )
    player = forms.CharField(
        max_length=150,
        required=False,
        label="Player",
        help_text="a name, or Bot (strong)",  # the box's placeholder
    )
    result = forms.ChoiceField(
        choices=[("", "any result"), ("won", "won"), ("lost", "lost")],
        required=False,
        label="Result",
    )
    clock = forms.ChoiceField(
        choices=[
            ("", "any clock"),
            (Clock.DAYS_3, "3 days"),
            (Clock.DAYS_30, "30 days"),
            (Clock.LIVE, "live"),
        ],
        required=False,
        label="Clock",
    )
    bots = forms.ChoiceField(
        choices=[("", "with or without bots"), ("yes", "with a bot"), ("no", "people only")],
        required=False,
        label="Bots",
    )

    def __init__(self, *args: Any, with_player: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # `from` and `to` are Python keywords, so these two are added by name.
        date_input = forms.DateInput(attrs={"type": "date"})
        # Days as the server counts them, in UTC: the page's times are each viewer's own.
        # The date control's own format alone: "04/12/2026" is a day in one country and another
        # elsewhere, and Django would read it as 12 April.
        for name, label in (("from", "From (UTC)"), ("to", "To (UTC)")):
            self.fields[name] = forms.DateField(
                required=False,
                label=label,
                widget=date_input,
                input_formats=["%Y-%m-%d"],
                error_messages={"invalid": "Enter a day as year-month-day, such as 2026-12-04."},
            )
        if not with_player:
            del self.fields["player"]

    def clean_player(self) -> str:
        """A person's name as typed, or a bot's as the site writes it: "bot (Strong)" is
        "Bot (strong)". A bot's name with a level no bot has is refused."""
        name: str = self.cleaned_data["player"]
        level = bot_level_named(name)
        if level is None:
            return name
        if level not in all_levels():
            bots = listed([bot_name(known) for known in all_levels()])
            raise forms.ValidationError(f"There is no bot named “{name}”: the bots are {bots}.")
        return bot_name(level)

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("from"), data.get("to")
        if since and until and since > until:
            self.add_error("to", "The end date is before the start date.")
            # A refused range filters by neither end: the start alone would be half of it.
            data.pop("from", None)
        if data.get("result") and "player" in self.fields and not data.get("player"):
            # Won or lost by nobody: dropped, and said so unless the player's own error says why.
            if "player" not in self.errors:
                self.add_error("result", "Choose a player to see the games they won or lost.")
            data.pop("result", None)
        return data

    def controls_html(self) -> SafeString:
        """The fields as HTML (a label around each control): a page of games is drawn often,
        and Django's widget templates, or a template loop over the options, would cost more
        than the database does. Every text is escaped."""
        out = []
        for name, f in self.fields.items():
            raw = self.data.get(name, "") if self.is_bound else ""
            value = raw if isinstance(raw, str) else ""
            if isinstance(f, forms.ChoiceField):
                choices: list[tuple[str, str]] = list(f.choices)  # type: ignore[arg-type]
                options = "".join(
                    f'<option value="{escape(v)}"{" selected" if v == value else ""}>'
                    f"{escape(str(label))}</option>"
                    for v, label in choices
                )
                control = f'<select name="{name}" id="id_{name}">{options}</select>'
            else:
                kind = "date" if isinstance(f, forms.DateField) else "search"
                extra = ' maxlength="150" autocomplete="off"' if kind == "search" else ""
                if f.help_text:
                    extra += f' placeholder="{escape(str(f.help_text))}"'
                control = (
                    f'<input type="{kind}" name="{name}" id="id_{name}" '
                    f'value="{escape(value)}"{extra}>'
                )
            out.append(
                f'<label class="filter filter-{name}" for="id_{name}">'
                f"<span>{escape(str(f.label))}</span> {control}</label>\n"
            )
        return mark_safe("".join(out))  # every text escaped above

    def filters(self, *, player: str = "") -> Filters:
        """The valid filters; invalid fields are left out (their errors show on the form)."""
        data = self.cleaned_data if self.is_bound and hasattr(self, "cleaned_data") else {}

        def ok(name: str) -> Any:
            return None if name in self.errors else data.get(name)

        return Filters(
            kind=ok("game") or "",
            player=player or (ok("player") or "").strip(),
            result=ok("result") or "",
            clock=ok("clock") or "",
            bots=ok("bots") or "",
            since=ok("from"),
            until=ok("to"),
        )


def filters_from(params: Any, *, player: str = "") -> tuple[FilterForm, Filters]:
    """The form, bound to the query string, and the filters it gives. With `player`, the page
    is that player's: the form has no player field."""
    form = FilterForm(params, with_player=not player)
    form.is_valid()
    return form, form.filters(player=player)
