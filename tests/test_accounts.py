"""Accounts: sign up, sign in and out, password reset, guests and their private link, claiming
a guest account, email addresses and their verification."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
import time_machine
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import AnonymousUser, User
from django.contrib.sessions.middleware import SessionMiddleware
from django.core import mail, signing
from django.db import IntegrityError, transaction
from django.test import Client, RequestFactory
from django.urls import reverse

from games.accounts import profiles
from games.accounts.guests import guest_create, player_for
from games.mail import preferences
from games.models import Game, Profile, Seat, users_named
from games.play import core

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery"


def signed_in_pk(client: Client) -> int | None:
    value = client.session.get(SESSION_KEY)
    return int(value) if value is not None else None


def link_in(message: mail.EmailMessage, name: str) -> str:
    """The path of the first link to the url `name` in a mail's text."""
    prefix = reverse(name, kwargs=_LINK_KWARGS[name]).split("PLACEHOLDER")[0]
    match = re.search(re.escape(settings.SITE_URL + prefix) + r"\S+", message.body)
    assert match, message.body
    return match.group(0).removeprefix(settings.SITE_URL)


_LINK_KWARGS = {
    "email_verify": {"token": "PLACEHOLDER"},
    "password_reset_confirm": {"uidb64": "PLACEHOLDER", "token": "x"},
}


def guest_client(guest: User) -> Client:
    client = Client()
    client.force_login(guest)
    return client


def claim_data(**overrides: str) -> dict[str, str]:
    return {
        "username": "Theseus",
        "email": "",
        "password1": PASSWORD,
        "password2": PASSWORD,
        **overrides,
    }


# Sign up


def test_signup_creates_a_registered_user_and_signs_in(client: Client) -> None:
    response = client.post(reverse("signup"), claim_data(username="ariadne"))

    assert response.status_code == 302
    assert response.url == reverse("lobby")
    user = User.objects.get(username="ariadne")
    assert user.check_password(PASSWORD)
    assert user.profile.is_guest is False
    assert user.profile.guest_key == ""
    assert signed_in_pk(client) == user.pk
    page = client.get(reverse("account"))
    assert page.status_code == 200
    assert b"Your account" in page.content
    assert b"ariadne" in page.content


def test_signup_with_email_sends_a_verification_mail(
    client: Client, mailoutbox: list[mail.EmailMessage], django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("signup"), claim_data(username="ariadne", email="ari@example.com"))

    user = User.objects.get(username="ariadne")
    assert user.email == "ari@example.com"
    assert user.profile.email_verified is False
    (message,) = mailoutbox
    assert message.to == ["ari@example.com"]


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (claim_data(username="MINOS"), b"That username is taken"),
        (claim_data(password2="something else"), b"The two passwords differ"),
        (claim_data(password1="123", password2="123"), b"too short"),
        (claim_data(username="guest42"), b"kept for guests"),
        (claim_data(username="has space"), b"Enter a valid username"),
        (claim_data(username=""), b"This field is required"),
        # /players/./ and /players/../ are no pages: a browser reads them as paths.
        (claim_data(username="."), b"A username needs more than dots"),
        (claim_data(username=".."), b"A username needs more than dots"),
    ],
)
def test_signup_refuses_bad_input_and_creates_nobody(
    client: Client, make_user, data: dict[str, str], error: bytes
) -> None:
    make_user("minos")
    before = User.objects.count()

    response = client.post(reverse("signup"), data)

    assert response.status_code == 400
    assert error in response.content
    assert User.objects.count() == before
    assert signed_in_pk(client) is None


def test_signup_tells_a_guest_to_claim_instead() -> None:
    guest = guest_create()
    client = guest_client(guest)

    page = client.get(reverse("signup"))
    assert reverse("account").encode() + b"#claim" in page.content
    assert b'name="password1"' not in page.content

    before = User.objects.count()
    response = client.post(reverse("signup"), claim_data())
    assert response.status_code == 400
    assert User.objects.count() == before
    assert signed_in_pk(client) == guest.pk


# Sign in and out


def test_sign_in_and_out(client: Client, make_user) -> None:
    user = make_user("minos", password=PASSWORD)
    assert b'name="username"' in client.get(reverse("login")).content

    refused = client.post(reverse("login"), {"username": "minos", "password": "wrong"})
    assert refused.status_code == 200
    assert b"That name and password do not match." in refused.content
    assert signed_in_pk(client) is None

    response = client.post(reverse("login"), {"username": "minos", "password": PASSWORD})
    assert response.status_code == 302
    assert response.url == reverse("lobby")
    assert signed_in_pk(client) == user.pk

    # The name as the player has it in mind: names are unique ignoring case.
    other = Client()
    response = other.post(reverse("login"), {"username": " MINOS", "password": PASSWORD})
    assert response.status_code == 302 and signed_in_pk(other) == user.pk
    wrong = Client().post(reverse("login"), {"username": "Minos", "password": "wrong"})
    assert wrong.status_code == 200 and b"That name and password do not match." in wrong.content

    # Signing out is a POST: a link or a prefetch only asks.
    assert b'id="logout-confirm"' in client.get(reverse("logout")).content
    assert signed_in_pk(client) == user.pk
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert signed_in_pk(client) is None


@pytest.mark.parametrize(
    ("first", "twin"),
    [("Straße", "STRASSE"), ("Zoë", "ZOË"), ("Ǆemal", "ǆemal"), ("Ａnna", "ANNA")],
)
def test_names_are_one_whatever_the_case_in_any_script(
    first: str, twin: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Names are unique ignoring case as Unicode folds it, which neither database's own
    comparison does in full (PostgreSQL's leaves ß, SQLite's folds ASCII only); the database
    keeps it so under two sign-ups at once too."""
    owner = profiles.account_create(username=first, password=PASSWORD, email="")
    before = User.objects.count()
    response = Client().post(
        reverse("signup"), {"username": twin, "password1": PASSWORD, "password2": PASSWORD}
    )
    assert response.status_code == 400 and profiles.USERNAME_TAKEN in response.content.decode()
    assert User.objects.count() == before
    guest = guest_create()
    answer = guest_client(guest).post(reverse("guest_claim"), claim_data(username=twin, email=""))
    assert answer.status_code == 400 and User.objects.get(pk=guest.pk).username != twin
    # Outside any transaction (manage.py createsuperuser): refused before the user is written.
    with pytest.raises(IntegrityError, match="taken"):
        User.objects.create_user(username=twin, password=PASSWORD)
    assert User.objects.count() == before + 1  # the guest
    # Past the checks (the other sign-up checked before this one was stored): refused all
    # the same, by the database's unique key.
    monkeypatch.setattr(profiles, "users_named", lambda name: User.objects.none())
    with pytest.raises(profiles.AccountError, match="taken"), transaction.atomic():
        profiles.account_create(username=twin, password=PASSWORD, email="")
    assert User.objects.count() == before + 1
    # Signing in with the twin is signing in as the owner.
    client = Client()
    assert (
        client.post(reverse("login"), {"username": twin, "password": PASSWORD}).status_code == 302
    )
    assert signed_in_pk(client) == owner.pk


def test_the_admin_refuses_a_name_that_is_anothers_but_for_case() -> None:
    profiles.account_create(username="Straße", password=PASSWORD, email="")
    bob = profiles.account_create(username="bob", password=PASSWORD, email="")
    staff = User.objects.create_superuser("root-admin", "root@example.com", PASSWORD)
    client = Client()
    client.force_login(staff)
    before = User.objects.count()
    added = client.post(
        reverse("admin:auth_user_add"),
        {"username": "STRASSE", "password1": PASSWORD, "password2": PASSWORD},
    )
    assert added.status_code == 200 and profiles.USERNAME_TAKEN in added.content.decode()
    assert User.objects.count() == before
    page = client.get(reverse("admin:auth_user_change", args=[bob.pk]))
    assert page.status_code == 200
    form = {"username": "strasse", "date_joined_0": "2026-12-01", "date_joined_1": "10:00:00"}
    changed = client.post(reverse("admin:auth_user_change", args=[bob.pk]), form)
    assert changed.status_code == 200 and profiles.USERNAME_TAKEN in changed.content.decode()
    assert User.objects.get(pk=bob.pk).username == "bob"
    renamed = client.post(
        reverse("admin:auth_user_change", args=[bob.pk]), {**form, "username": "bobby"}
    )
    assert renamed.status_code == 302
    assert users_named("BOBBY").get().pk == bob.pk


def test_a_guest_is_told_what_signing_out_leaves_behind(make_cornmaze) -> None:
    game = make_cornmaze()
    guest = guest_create()
    Seat.objects.filter(game=game, index=1).update(user=guest)
    client = guest_client(guest)
    link = reverse("guest_return", args=[guest.profile.guest_key])

    # The header's "Sign out" is a link to a page that asks first.
    header = client.get(reverse("lobby")).content.decode()
    assert f'<a href="{reverse("logout")}" class="sign-out">Sign out</a>' in header
    page = client.get(reverse("logout"))
    assert page.status_code == 200
    text = page.content.decode()
    assert "only its private link brings you back" in text
    assert "its 1 unfinished game" in text
    assert f'value="http://testserver{link}"' in text
    assert f'href="{reverse("account")}#claim"' in text
    assert signed_in_pk(client) == guest.pk

    # A POST that does not confirm (an old page's button) asks too.
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert response.url == reverse("logout")
    assert signed_in_pk(client) == guest.pk

    response = client.post(reverse("logout"), {"confirm": "yes"})
    assert response.status_code == 302
    assert response.url == reverse("lobby")
    assert signed_in_pk(client) is None
    # The link still brings the guest back.
    assert Client().post(link).status_code == 302


def test_a_registered_user_signs_out_at_once(client: Client, make_user) -> None:
    user = make_user("minos")
    client.force_login(user)
    header = client.get(reverse("lobby")).content.decode()
    assert f'<form method="post" action="{reverse("logout")}" class="inline">' in header
    response = client.post(reverse("logout"))
    assert response.status_code == 302
    assert signed_in_pk(client) is None


def test_header_links_to_the_account_page(client: Client, make_user) -> None:
    client.force_login(make_user("minos"))
    page = client.get(reverse("password_change")).content.decode()
    assert f'href="{reverse("account")}"' in page
    assert "Your account" in page
    assert f'action="{reverse("logout")}"' in page

    guest_page = guest_client(guest_create()).get(reverse("account")).content.decode()
    assert ">Claim account<" in guest_page


def test_account_page_needs_sign_in(client: Client) -> None:
    response = client.get(reverse("account"))
    assert response.status_code == 302
    assert response.url.startswith(reverse("login"))


def test_account_page_for_a_user_without_profile(client: Client) -> None:
    admin = User.objects.create_superuser("admin", "admin@example.com", PASSWORD)
    assert not Profile.objects.filter(user=admin).exists()
    client.force_login(admin)

    page = client.get(reverse("account"))

    assert page.status_code == 200
    assert b"admin@example.com" in page.content
    assert b"not verified yet" in page.content
    assert Profile.objects.get(user=admin).is_guest is False


# Password reset and change


def test_password_reset_by_email(
    client: Client, make_user, mailoutbox: list[mail.EmailMessage]
) -> None:
    user = make_user("minos", password="the old password")
    user.email = "minos@example.com"
    user.save()
    Profile.objects.create(user=user, email_verified=True)

    response = client.post(reverse("password_reset"), {"email": "minos@example.com"})
    assert response.status_code == 302
    assert response.url == reverse("password_reset_done")
    (message,) = mailoutbox
    assert message.to == ["minos@example.com"]
    assert "minos" in message.body
    link = link_in(message, "password_reset_confirm")

    # The link redirects to a URL without the token, which shows the form.
    form_page = client.get(link, follow=True)
    assert b'name="new_password1"' in form_page.content
    assert b"At least 8 characters; not too common" in form_page.content  # the site's words
    differ = client.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "a brand new secret", "new_password2": "another secret"},
    )
    assert b"The two passwords differ. Type the same one twice." in differ.content
    user.refresh_from_db()
    assert user.check_password("the old password")
    response = client.post(
        form_page.redirect_chain[-1][0],
        {"new_password1": "a brand new secret", "new_password2": "a brand new secret"},
    )
    assert response.status_code == 302
    assert response.url == reverse("password_reset_complete")
    user.refresh_from_db()
    assert user.check_password("a brand new secret")

    # Used once, the link is dead.
    dead = client.get(link, follow=True)
    assert b"This link does not work" in dead.content


def test_password_reset_for_an_unknown_address_sends_nothing(
    client: Client, mailoutbox: list[mail.EmailMessage]
) -> None:
    response = client.post(reverse("password_reset"), {"email": "nobody@example.com"})
    assert response.status_code == 302
    assert mailoutbox == []


def test_password_change(client: Client, make_user) -> None:
    user = make_user("minos", password=PASSWORD)
    client.force_login(user)
    page = client.get(reverse("password_change")).content.decode()
    assert "At least 8 characters; not too common" in page and "New password again" in page
    differ = client.post(
        reverse("password_change"),
        {"old_password": PASSWORD, "new_password1": "a brand new one", "new_password2": "other"},
    )
    assert "The two passwords differ. Type the same one twice." in differ.content.decode()
    user.refresh_from_db()
    assert user.check_password(PASSWORD)

    response = client.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "a brand new secret",
            "new_password2": "a brand new secret",
        },
    )

    assert response.status_code == 302
    user.refresh_from_db()
    assert user.check_password("a brand new secret")
    assert signed_in_pk(client) == user.pk


def test_a_guest_has_no_password_to_change() -> None:
    client = guest_client(guest_create())
    response = client.get(reverse("password_change"))
    assert response.status_code == 302
    assert response.url == reverse("account")


# Guests


def test_player_for_makes_a_guest_once_per_session(rf: RequestFactory) -> None:
    request = rf.post("/new/cornmaze/")
    SessionMiddleware(lambda r: None).process_request(request)  # type: ignore[arg-type,return-value]
    request.user = AnonymousUser()

    with player_for(request) as guest:
        assert SESSION_KEY not in request.session  # signed in only once the action succeeds

    assert guest.get_username().startswith("Guest ")
    assert not guest.has_usable_password()
    profile = Profile.objects.get(user=guest)
    assert profile.is_guest
    assert len(profile.guest_key) >= 32
    assert request.session[SESSION_KEY] == str(guest.pk)
    with player_for(request) as again:
        assert again == guest
    assert User.objects.count() == 1


def test_player_for_keeps_no_guest_when_the_action_is_refused(rf: RequestFactory) -> None:
    request = rf.post("/games/1/join")
    SessionMiddleware(lambda r: None).process_request(request)  # type: ignore[arg-type,return-value]
    request.user = AnonymousUser()

    with pytest.raises(core.GameError), player_for(request):
        raise core.GameError("There is no such game.")

    assert not User.objects.exists() and not Profile.objects.exists()
    assert SESSION_KEY not in request.session


def test_guest_account_page_shows_the_private_link() -> None:
    guest = guest_create()

    page = guest_client(guest).get(reverse("account"))

    key = guest.profile.guest_key
    assert f"http://testserver/accounts/guest/{key}/".encode() in page.content
    assert b'id="claim-form"' in page.content
    assert b'id="email-form"' in page.content


def test_private_link_brings_the_guest_back_in_another_browser() -> None:
    guest = guest_create()
    link = reverse("guest_return", args=[guest.profile.guest_key])
    other = Client()

    page = other.get(link)
    assert page.status_code == 200
    assert guest.get_username().encode() in page.content
    assert signed_in_pk(other) is None  # a GET, such as a link preview, signs nobody in

    response = other.post(link)
    assert response.status_code == 302
    assert response.url == reverse("lobby")
    assert signed_in_pk(other) == guest.pk


def test_private_link_warns_who_is_signed_in_now() -> None:
    first, second = guest_create(), guest_create()
    client = guest_client(first)

    page = client.get(reverse("guest_return", args=[second.profile.guest_key]))

    assert b"signs you out of it" in page.content
    assert b"That is a guest account too" in page.content
    client.post(reverse("guest_return", args=[second.profile.guest_key]))
    assert signed_in_pk(client) == second.pk


@pytest.mark.parametrize("method", ["get", "post"])
def test_a_wrong_private_link_is_not_found(client: Client, make_user, method: str) -> None:
    guest_create()
    make_user("minos")  # registered users have an empty key, which must match nothing

    response = getattr(client, method)(reverse("guest_return", args=["not-a-real-key"]))

    assert response.status_code == 404
    assert b"This private link does not lead to a guest account" in response.content
    assert signed_in_pk(client) is None


# Claiming a guest account


def make_game_with_seat(user: User) -> Seat:
    game = Game.objects.create(kind="cornmaze", seed=b"x" * 32, seed_sha256="0" * 64)
    return Seat.objects.create(game=game, index=0, user=user)


def test_claim_keeps_the_user_and_its_seats(
    mailoutbox: list[mail.EmailMessage], django_capture_on_commit_callbacks
) -> None:
    guest = guest_create()
    seat = make_game_with_seat(guest)
    old_link = reverse("guest_return", args=[guest.profile.guest_key])
    client = guest_client(guest)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("guest_claim"), claim_data(email="th@example.com"))

    assert response.status_code == 302
    assert response.url == reverse("account")
    claimed = User.objects.get(pk=guest.pk)
    assert claimed.username == "Theseus"
    assert claimed.check_password(PASSWORD)
    assert claimed.email == "th@example.com"
    assert claimed.profile.is_guest is False
    assert claimed.profile.guest_key == ""
    assert list(Seat.objects.filter(user=claimed)) == [seat]
    assert User.objects.count() == 1
    (message,) = mailoutbox
    assert message.to == ["th@example.com"]

    # Still signed in here, although the password changed; the header has the new name.
    page = client.get(reverse("account"))
    assert page.status_code == 200
    assert b"Theseus" in page.content
    assert b"Your account" in page.content

    # The old private link no longer works, anywhere.
    other = Client()
    assert other.get(old_link).status_code == 404
    assert other.post(old_link).status_code == 404
    assert signed_in_pk(other) is None

    # Signing in with the chosen name and password does.
    other.post(reverse("login"), {"username": "Theseus", "password": PASSWORD})
    assert signed_in_pk(other) == guest.pk


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (claim_data(username="minos"), b"That username is taken"),
        (claim_data(password2="something else"), b"The two passwords differ"),
        (claim_data(email="not an address"), b"Enter a valid email address"),
    ],
)
def test_a_refused_claim_changes_nothing(
    make_user, mailoutbox: list[mail.EmailMessage], data: dict[str, str], error: bytes
) -> None:
    make_user("Minos")
    guest = guest_create()
    key = guest.profile.guest_key
    client = guest_client(guest)

    response = client.post(reverse("guest_claim"), data)

    assert response.status_code == 400
    assert error in response.content
    # The page still shows the guest, under its old name.
    assert guest.get_username().encode() in response.content
    after = User.objects.get(pk=guest.pk)
    assert after.username == guest.get_username()
    assert not after.has_usable_password()
    assert after.email == ""
    assert after.profile.is_guest
    assert after.profile.guest_key == key
    assert mailoutbox == []


def test_claim_service_refuses_a_taken_name_and_changes_nothing(make_user) -> None:
    make_user("minos")
    guest = guest_create()
    name = guest.get_username()

    with pytest.raises(profiles.AccountError, match="taken") as caught:
        profiles.guest_claim(user=guest, username="MINOS", password=PASSWORD, email="")

    assert caught.value.field == "username"
    assert guest.get_username() == name
    guest.refresh_from_db()
    assert guest.get_username() == name
    assert guest.profile.is_guest


def test_a_registered_user_has_nothing_to_claim(client: Client, make_user) -> None:
    user = make_user("minos", password=PASSWORD)
    client.force_login(user)

    response = client.post(reverse("guest_claim"), claim_data(), follow=True)

    assert b"nothing to claim" in response.content
    with pytest.raises(profiles.AccountError, match="nothing to claim"):
        profiles.guest_claim(user=user, username="Theseus", password=PASSWORD, email="")
    user.refresh_from_db()
    assert user.username == "minos"


# Email addresses


def test_a_guest_adds_an_email_and_verifies_it(
    mailoutbox: list[mail.EmailMessage], django_capture_on_commit_callbacks
) -> None:
    guest = guest_create()
    client = guest_client(guest)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("email_change"), {"email": "g@Example.COM"})

    assert response.status_code == 302
    guest.refresh_from_db()
    assert guest.email == "g@example.com"
    assert guest.profile.is_guest  # adding an address does not claim the account
    assert guest.profile.email_verified is False
    (message,) = mailoutbox
    assert message.to == ["g@example.com"]
    assert "Confirm" in message.subject
    (html, mimetype), *_ = message.alternatives  # type: ignore[attr-defined]
    assert mimetype == "text/html"
    link = link_in(message, "email_verify")
    assert link in html

    # No sign-in is needed to open the link.
    response = Client().get(link)
    assert response.status_code == 200
    assert b"g@example.com" in response.content
    assert b"is verified" in response.content
    guest.profile.refresh_from_db()
    assert guest.profile.email_verified is True
    assert Client().get(link).status_code == 200  # twice is fine

    assert b"verified" in client.get(reverse("account")).content


def test_an_unverified_address_is_replaced_at_once_and_its_link_dies(
    client: Client, make_user, django_capture_on_commit_callbacks
) -> None:
    user = make_user("minos")
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("email_change"), {"email": "old@example.com"})
    user.refresh_from_db()
    old_token = profiles.email_verify_token(user=user)

    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("email_change"), {"email": "new@example.com"})

    user.refresh_from_db()
    assert user.email == "new@example.com"
    assert user.profile.email_verified is False
    assert user.profile.pending_email == ""
    response = Client().get(reverse("email_verify", args=[old_token]))
    assert response.status_code == 400
    assert b"no longer has" in response.content
    user.profile.refresh_from_db()
    assert user.profile.email_verified is False


def verified_player(make_user, address: str = "old@example.com") -> User:
    user = make_user("minos", password=PASSWORD)
    user.email = address
    user.save()
    Profile.objects.update_or_create(user=user, defaults={"email_verified": True})
    return user


def test_a_verified_address_keeps_its_mail_until_the_new_one_is_confirmed(
    client: Client,
    make_user,
    mailoutbox: list[mail.EmailMessage],
    django_capture_on_commit_callbacks,
) -> None:
    user = verified_player(make_user)
    client.force_login(user)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("email_change"), {"email": "new@exmaple.com"}, follow=True)

    assert b"We sent a link to new@exmaple.com" in response.content
    assert b"until then, mail keeps going to old@example.com" in response.content
    user.refresh_from_db()
    assert (user.email, user.profile.email_verified) == ("old@example.com", True)
    assert user.profile.pending_email == "new@exmaple.com"
    (link_mail,) = mailoutbox
    assert link_mail.to == ["new@exmaple.com"]
    page = client.get(reverse("account")).content.decode()
    assert 'old@example.com</span>\n  <span class="verified">(verified)' in page
    assert 'Changing to <span class="email-address">new@exmaple.com</span>' in page

    # The typo'd address is not the player's yet: mail and password resets go to the old one.
    assert preferences.verified_address(user) == "old@example.com"
    Client().post(reverse("password_reset"), {"email": "old@example.com"})
    assert mailoutbox[-1].to == ["old@example.com"]
    assert "password" in mailoutbox[-1].subject.lower()
    Client().post(reverse("password_reset"), {"email": "new@exmaple.com"})
    assert len(mailoutbox) == 2

    # Asking again sends the link to the waiting address.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("email_verify_resend"))
    assert mailoutbox[-1].to == ["new@exmaple.com"]

    # The player fixes the typo: the first link dies, the second one makes the switch.
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("email_change"), {"email": "new@example.com"})
    assert mailoutbox[-1].to == ["new@example.com"]
    typo_link = link_in(link_mail, "email_verify")
    assert Client().get(typo_link).status_code == 400
    user.refresh_from_db()
    assert (user.email, user.profile.pending_email) == ("old@example.com", "new@example.com")

    response = Client().get(link_in(mailoutbox[-1], "email_verify"))
    assert response.status_code == 200
    assert b"new@example.com</strong> is verified" in response.content
    user.refresh_from_db()
    user.profile.refresh_from_db()
    assert (user.email, user.profile.email_verified) == ("new@example.com", True)
    assert user.profile.pending_email == ""
    assert preferences.verified_address(user) == "new@example.com"
    assert Client().get(link_in(mailoutbox[-1], "email_verify")).status_code == 200  # twice


def test_asking_for_the_verified_address_again_calls_a_change_off(
    client: Client,
    make_user,
    mailoutbox: list[mail.EmailMessage],
    django_capture_on_commit_callbacks,
) -> None:
    user = verified_player(make_user)
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(reverse("email_change"), {"email": "new@example.com"})
    (link_mail,) = mailoutbox

    # The account page's "Keep old@example.com" posts the verified address.
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("email_change"), {"email": "old@example.com"}, follow=True)

    assert b"Mail keeps going to old@example.com" in response.content
    assert b"email-pending" not in response.content
    user.refresh_from_db()
    assert (user.email, user.profile.email_verified) == ("old@example.com", True)
    assert user.profile.pending_email == ""
    assert len(mailoutbox) == 1
    assert Client().get(link_in(link_mail, "email_verify")).status_code == 400
    user.refresh_from_db()
    assert user.email == "old@example.com"


def test_an_address_is_kept_as_mail_goes_to_it_and_its_capitals_need_no_new_link(
    client: Client,
    make_user,
    mailoutbox: list[mail.EmailMessage],
    django_capture_on_commit_callbacks,
) -> None:
    user = make_user("minos")
    client.force_login(user)
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            reverse("email_change"),
            {"email": "Minos@\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com"},
        )
    user.refresh_from_db()
    assert user.email == "Minos@example.com"  # full-width letters are the letters mail uses
    (link,) = mailoutbox
    assert link.to == ["Minos@example.com"]
    token = profiles.email_verify_token(user=user)
    assert Client().get(reverse("email_verify", args=[token])).status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("email_change"), {"email": "MINOS@EXAMPLE.COM"})
    assert response.status_code == 302
    user.refresh_from_db()
    assert user.email == "MINOS@example.com" and user.profile.email_verified
    assert len(mailoutbox) == 1  # no new link for the same address in other capitals


def test_resend_the_verification_link(
    client: Client,
    make_user,
    mailoutbox: list[mail.EmailMessage],
    django_capture_on_commit_callbacks,
) -> None:
    user = make_user("minos")
    user.email = "minos@example.com"
    user.save()
    client.force_login(user)

    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("email_verify_resend"))

    assert response.status_code == 302
    (message,) = mailoutbox
    assert message.to == ["minos@example.com"]


def test_email_form_refuses_a_bad_address(client: Client, make_user) -> None:
    user = make_user("minos")
    client.force_login(user)

    response = client.post(reverse("email_change"), {"email": "not an address"})

    assert response.status_code == 400
    assert b"Enter a valid email address" in response.content
    user.refresh_from_db()
    assert user.email == ""


def tampered(token: str) -> str:
    return token[:-2] + ("aa" if not token.endswith("aa") else "bb")


@pytest.mark.parametrize("make_token", [lambda t: "garbage", tampered, lambda t: t[:-10]])
def test_a_bad_token_is_refused(client: Client, make_user, make_token) -> None:
    user = make_user("minos")
    user.email = "minos@example.com"
    user.save()
    token = make_token(profiles.email_verify_token(user=user))

    response = client.get(reverse("email_verify", args=[token]))

    assert response.status_code == 400
    assert b"This link is not valid" in response.content
    assert profiles.profile_for(user).email_verified is False


def test_a_token_for_another_purpose_is_refused(client: Client, make_user) -> None:
    user = make_user("minos")
    user.email = "minos@example.com"
    user.save()
    token = signing.dumps({"u": user.pk, "e": user.email})  # signed, but without our salt

    response = client.get(reverse("email_verify", args=[token]))

    assert response.status_code == 400
    assert profiles.profile_for(user).email_verified is False


def test_an_expired_token_is_refused(client: Client, make_user) -> None:
    user = make_user("minos")
    user.email = "minos@example.com"
    user.save()
    token = profiles.email_verify_token(user=user)

    with time_machine.travel(timedelta(days=8), tick=False):
        response = client.get(reverse("email_verify", args=[token]))

    assert response.status_code == 400
    assert b"expired" in response.content
    assert profiles.profile_for(user).email_verified is False


@pytest.mark.parametrize(
    "name",
    ["login", "signup", "password_reset", "password_reset_done", "password_reset_complete"],
)
def test_pages_for_visitors_render(client: Client, name: str) -> None:
    assert client.get(reverse(name)).status_code == 200


@pytest.mark.parametrize("name", ["login", "signup", "password_change", "password_change_done"])
def test_pages_for_registered_users_render(client: Client, make_user, name: str) -> None:
    client.force_login(make_user("minos"))
    assert client.get(reverse(name)).status_code == 200


def test_sign_in_page_warns_a_guest() -> None:
    page = guest_client(guest_create()).get(reverse("login"))
    assert b"leaves this guest behind" in page.content


def test_the_signed_in_user_is_read_with_its_profile_in_one_query(
    make_user, django_assert_num_queries
) -> None:
    """accounts.backends.user_with_profile (a compiled read): the user and its profile, related
    both ways, in one query; a user with no profile has it cached as None; no user: None."""
    from games.accounts.backends import user_with_profile

    user = make_user("reader")
    Profile.objects.get_or_create(user=user)
    bare = User.objects.create_user(username="noprofile")
    assert not Profile.objects.filter(user=bare).exists()
    with django_assert_num_queries(1):
        found = user_with_profile(str(user.pk))
    assert found is not None and found.pk == user.pk and found.username == "reader"
    profile_pk = Profile.objects.get(user=user).pk
    with django_assert_num_queries(0):
        assert found.profile.user is found and found.profile.pk == profile_pk
    found = user_with_profile(bare.pk)
    assert found is not None and found.username == "noprofile"
    with django_assert_num_queries(0), pytest.raises(Profile.DoesNotExist):
        found.profile  # noqa: B018
    assert user_with_profile(10**9) is None
    assert user_with_profile("not a number") is None


# The signed-in user kept in the cache (accounts.backends)


def user_reads(call) -> tuple[int, object]:
    """How many of the queries `call` makes read the users table, and what it returned."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        result = call()
    return sum('FROM "auth_user"' in q["sql"] for q in captured.captured_queries), result


def test_the_signed_in_user_is_kept_in_the_cache_after_its_first_read(make_user) -> None:
    from games.accounts.backends import user_with_profile

    user = make_user("keeper")
    Profile.objects.get_or_create(user=user)
    reads, first = user_reads(lambda: user_with_profile(user.pk))
    assert reads == 1
    reads, kept = user_reads(lambda: user_with_profile(str(user.pk)))
    assert reads == 0
    assert kept is not first and kept.pk == user.pk and kept.username == "keeper"
    reads, profile = user_reads(lambda: kept.profile)
    assert reads == 0 and profile.user is kept
    # Each id its own: another user is read for itself.
    other = make_user("other")
    assert user_with_profile(other.pk).username == "other"
    assert user_with_profile(user.pk).username == "keeper"


def test_a_change_to_the_user_or_its_profile_is_read_at_once(
    client: Client, make_user, django_capture_on_commit_callbacks
) -> None:
    from games.accounts.backends import user_with_profile

    guest = guest_create()
    client = guest_client(guest)
    client.get(reverse("account"))
    assert user_reads(lambda: client.get(reverse("account")))[0] == 0  # kept
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(reverse("guest_claim"), claim_data())
    assert response.status_code == 302
    page = client.get(reverse("account"))
    assert b"Theseus" in page.content
    claimed = user_with_profile(guest.pk)
    assert claimed.username == "Theseus" and claimed.profile.is_guest is False
    profiles.time_zone_set(user=claimed, name="Europe/Paris")
    assert user_with_profile(guest.pk).profile.time_zone == "Europe/Paris"
    User.objects.get(pk=guest.pk).delete()
    assert user_with_profile(guest.pk) is None


def test_a_new_password_signs_out_every_other_session_at_once(make_user) -> None:
    user = make_user("ariadne", password=PASSWORD)
    here, there = Client(), Client()
    for client in (here, there):
        client.force_login(user)
        client.get(reverse("account"))
    assert user_reads(lambda: there.get(reverse("account")))[0] == 0  # kept
    response = here.post(
        reverse("password_change"),
        {
            "old_password": PASSWORD,
            "new_password1": "another secret",
            "new_password2": "another secret",
        },
    )
    assert response.status_code == 302
    assert here.get(reverse("account")).status_code == 200  # the changer stays signed in
    assert there.get(reverse("account")).status_code == 302  # to the sign-in page
    assert signed_in_pk(there) is None
    here.post(reverse("logout"))
    assert here.get(reverse("account")).status_code == 302


def test_a_changed_user_is_read_from_the_database_alone_while_marked(make_user, settings) -> None:
    """A request that read the user before a change committed cannot keep its old row: the
    change leaves a mark, and while it is there nothing is kept."""
    from django.core.cache import cache

    from games.accounts import backends

    settings.USER_CACHE_MARK_SECONDS = 5
    user = make_user("racer")
    backends.user_with_profile(user.pk)
    user.first_name = "Changed"
    user.save()
    key = backends._cache_key(user.pk)
    assert cache.get(key) == backends.CHANGED
    for _ in range(2):
        reads, found = user_reads(lambda: backends.user_with_profile(user.pk))
        assert reads == 1 and found.first_name == "Changed"
    assert cache.get(key) == backends.CHANGED
    assert cache.add(key, "an old row", 60) is False
    # A sign-in's own save of last_login leaves the copy.
    cache.delete(key)
    backends.user_with_profile(user.pk)
    user.save(update_fields=["last_login"])
    assert isinstance(cache.get(key), User)


def test_the_user_is_read_from_the_database_while_the_cache_fails(make_user, monkeypatch) -> None:
    from django.core.cache import cache

    from games.accounts import backends

    user = make_user("offline")

    def fails(*args: object, **kwargs: object) -> None:
        raise ConnectionError("no cache")

    monkeypatch.setattr(cache, "get", fails)
    monkeypatch.setattr(cache, "add", fails)
    monkeypatch.setattr(cache, "set", fails)
    assert backends.user_with_profile(user.pk).username == "offline"
    user.save()  # forgetting it fails too, and says so in the log
