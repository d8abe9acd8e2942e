from __future__ import annotations

from typing import Any

from django import forms

from .bots import levels
from .models import Clock

PERSON = "person"


class CornmazeCreateForm(forms.Form):
    size = forms.IntegerField(min_value=6, max_value=12, initial=8, label="Board size")
    seats = forms.IntegerField(min_value=2, max_value=6, initial=2, label="Players")
    clock = forms.ChoiceField(
        choices=[(Clock.DAYS_3, "3 days per move"), (Clock.DAYS_30, "30 days per move")],
        initial=Clock.DAYS_3,
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(PERSON, "a person (open seat)")] + [
            (level, f"bot: {level}") for level in levels("cornmaze")
        ]
        for i in range(1, 6):
            self.fields[f"seat_{i}"] = forms.ChoiceField(
                choices=choices, initial=PERSON, required=False, label=f"Seat {i + 1}"
            )

    def seat_bots(self) -> list[str]:
        """The bot level for each seat ("" for a person), seat 0 being the creator's."""
        seats: int = self.cleaned_data["seats"]
        return [""] + [
            ""
            if (self.cleaned_data.get(f"seat_{i}") or PERSON) == PERSON
            else self.cleaned_data[f"seat_{i}"]
            for i in range(1, seats)
        ]


class CornmazeMoveForm(forms.Form):
    ply = forms.IntegerField(min_value=0)
    first = forms.CharField(max_length=2)
    second = forms.CharField(max_length=2)

    def __init__(self, *args: Any, size: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.size = size

    def _column(self, name: str) -> int:
        letter = self.cleaned_data[name].strip().lower()
        if len(letter) != 1 or not "a" <= letter < chr(ord("a") + self.size):
            last = chr(ord("a") + self.size - 1)
            raise forms.ValidationError(f"Choose a column from a to {last}.")
        return ord(letter) - ord("a")

    def clean_first(self) -> int:
        return self._column("first")

    def clean_second(self) -> int:
        return self._column("second")
