"""Reading numbers that people (or their browsers) send: ASCII digits only, one way everywhere.

`str.isdigit` takes superscripts (`²`) that `int` then refuses, and `int` takes other scripts'
digits (`٣`), signs, spaces and underscores: none of those is a number a form of ours sends, and
each used to slip past one check into the next."""

from __future__ import annotations

from typing import Any

from django import forms

# Enough for any ply, step, count or id we read, and short of PostgreSQL's integer (2**31 - 1).
MAX_DIGITS = 9


def ascii_int(text: Any, *, max_digits: int = MAX_DIGITS) -> int | None:
    """The whole number `text` spells in ASCII digits (spaces around it allowed), or None."""
    if not isinstance(text, str):
        return None
    text = text.strip()
    if not 0 < len(text) <= max_digits or not text.isascii() or not text.isdigit():
        return None
    return int(text)


class AsciiIntegerField(forms.IntegerField):
    """Django's IntegerField, reading ASCII digits only (see `ascii_int`)."""

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values:
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        number = ascii_int(value)
        if number is None:
            raise forms.ValidationError(self.error_messages["invalid"], code="invalid")
        return number


def text_field(value: Any) -> str:
    """A text field as a form sent it: "" when it is missing or not a string."""
    return value if isinstance(value, str) else ""
