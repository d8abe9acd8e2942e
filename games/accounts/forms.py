"""Forms for accounts: they read and check input; the functions in `accounts.profiles` decide."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django import forms
from django.contrib.auth import password_validation
from django.contrib.auth.forms import (
    AuthenticationForm,
    PasswordChangeForm,
    PasswordResetForm,
    SetPasswordForm,
)
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError

from games.accounts.profiles import (
    EMAIL_MAX_LENGTH,
    TIME_ZONE_UNKNOWN,
    USERNAME_MAX_LENGTH,
    time_zone_known,
    time_zone_names,
    username_normalize,
    username_problem,
)
from games.models import Profile

PASSWORD_HINT = "At least 8 characters; not too common, not only digits, not like your name."
PASSWORDS_DIFFER = "The two passwords differ. Type the same one twice."


def _password_field(label: str, hint: str = "") -> forms.CharField:
    return forms.CharField(
        label=label,
        strip=False,
        help_text=hint,
        widget=forms.PasswordInput(attrs={"autocomplete": "new-password"}),
    )


class SignupForm(forms.Form):
    username = forms.CharField(
        max_length=USERNAME_MAX_LENGTH,
        help_text="The name other players see. Letters, digits and @ . + - _ only.",
        widget=forms.TextInput(attrs={"autocomplete": "username", "autocapitalize": "none"}),
    )
    email = forms.EmailField(
        required=False,
        max_length=EMAIL_MAX_LENGTH,
        help_text="Optional: for reminders when it is your turn, and to reset a lost password.",
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )
    password1 = _password_field("Password", PASSWORD_HINT)
    password2 = _password_field("Password again")
    # The browser's time zone, filled in by static/js/timezone.js; UTC without it.
    time_zone = forms.CharField(
        required=False, max_length=64, widget=forms.HiddenInput(attrs={"data-time-zone": "guess"})
    )

    def clean_username(self) -> str:
        # The name as it will be stored; the service checks it again (accounts.username_problem).
        username = username_normalize(self.cleaned_data["username"])
        problem = username_problem(username)
        if problem:
            raise ValidationError(problem)
        return username

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        password1, password2 = cleaned.get("password1"), cleaned.get("password2")
        if password1 and password2 and password1 != password2:
            self.add_error("password2", PASSWORDS_DIFFER)
        elif password1:
            # Compared with the name and address being chosen, not the ones the user has now.
            candidate = User(username=cleaned.get("username", ""), email=cleaned.get("email", ""))
            try:
                password_validation.validate_password(password1, candidate)
            except ValidationError as error:
                self.add_error("password1", error)
        return cleaned


class ClaimForm(SignupForm):
    pass


class EmailForm(forms.Form):
    email = forms.EmailField(
        label="Email address",
        max_length=EMAIL_MAX_LENGTH,
        widget=forms.EmailInput(attrs={"autocomplete": "email"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # The account page shows this form beside the claim form, which has an email field too.
        kwargs.setdefault("auto_id", "id_address_%s")
        super().__init__(*args, **kwargs)


class TimeZoneForm(forms.Form):
    time_zone = forms.CharField(
        label="Time zone",
        max_length=64,
        help_text="Games with weekends off stop your clock on your own Saturdays and Sundays.",
        widget=forms.Select(attrs={"data-time-zone": "choose"}),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        widget = self.fields["time_zone"].widget
        assert isinstance(widget, forms.Select)
        widget.choices = [(name, name) for name in time_zone_names()]

    def clean_time_zone(self) -> str:
        name: str = self.cleaned_data["time_zone"].strip()
        if not time_zone_known(name):
            raise ValidationError(TIME_ZONE_UNKNOWN)
        return name


class SignInForm(AuthenticationForm):
    """Django's sign-in form, in the site's words: the name is found ignoring case
    (accounts.backends.stored_username), the password is not."""

    error_messages = {
        **AuthenticationForm.error_messages,
        "invalid_login": (
            "That name and password do not match. Check the password: its case counts."
        ),
    }


def _in_site_words(form: SetPasswordForm) -> None:
    """Django's forms that set a new password, with the sign-up form's hint and sentence."""
    form.error_messages = {**form.error_messages, "password_mismatch": PASSWORDS_DIFFER}
    form.fields["new_password1"].help_text = PASSWORD_HINT
    form.fields["new_password2"].label = "New password again"


class NewPasswordForm(SetPasswordForm):
    """A new password from a reset link."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _in_site_words(self)


class ChangePasswordForm(PasswordChangeForm):
    """A new password, with the old one."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _in_site_words(self)


class VerifiedPasswordResetForm(PasswordResetForm):
    """Django's reset form, sending the link only to an address its owner has verified: an
    address typed in at sign-up and never confirmed may belong to someone else."""

    def get_users(self, email: str) -> Iterator[User]:
        verified = set(
            Profile.objects.filter(email_verified=True, user__email__iexact=email).values_list(
                "user_id", flat=True
            )
        )
        return (user for user in super().get_users(email) if user.pk in verified)


# --- vacation (issue 14) -----------------------------------------------------------------------


class VacationForm(forms.Form):
    """Start a vacation: until a return date, or (none given) as long as the days left."""

    return_on = forms.DateField(
        label="Back on",
        required=False,
        widget=forms.DateInput(attrs={"type": "date"}),
    )

    def __init__(self, *args: Any, zone_name: str, **kwargs: Any) -> None:
        """`zone_name`: the player's time zone (Profile.time_zone), in which the day starts."""
        kwargs.setdefault("auto_id", "id_vacation_%s")
        super().__init__(*args, **kwargs)
        self.fields["return_on"].help_text = (
            f"Your clocks start again at midnight that day, {zone_name} time (see “Your time "
            "zone”). Leave it empty to stay away as long as your days last, or until you move."
        )

    def clean_return_on(self) -> Any:
        # strptime takes other scripts' digits (games/web/inputs.py): a date is ASCII only.
        raw = self.data.get("return_on", "")
        if isinstance(raw, str) and not raw.isascii():
            raise ValidationError("Enter a valid date.", code="invalid")
        return self.cleaned_data["return_on"]


class VacationAutomaticForm(forms.Form):
    automatic = forms.BooleanField(
        label="Automatic vacation",
        required=False,
        help_text="When a clock would run out, a vacation starts instead, while you have days.",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "id_vacation_%s")
        super().__init__(*args, **kwargs)
