"""Everything under /accounts/. The names of Django's auth views are kept (login, logout,
password_change, password_reset...), so that Django's own redirects find them."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import path

from games.accounts import views as account_views
from games.accounts.forms import NewPasswordForm

urlpatterns = [
    path("", account_views.account, name="account"),
    path("signup/", account_views.signup, name="signup"),
    path("claim/", account_views.guest_claim, name="guest_claim"),
    path("email/", account_views.email_change, name="email_change"),
    path("time-zone/", account_views.time_zone_change, name="time_zone_change"),
    path("email/resend/", account_views.email_verify_resend, name="email_verify_resend"),
    path("verify/<str:token>/", account_views.email_verify, name="email_verify"),
    path("guest/<str:key>/", account_views.guest_return, name="guest_return"),
    path("calendar/", account_views.calendar_link, name="calendar_link"),
    path("calendar/<str:token>.ics", account_views.calendar_feed, name="calendar_feed"),
    path("vacation/", account_views.vacation_start, name="vacation_start"),
    path("vacation/return/", account_views.vacation_end, name="vacation_end"),
    path("vacation/automatic/", account_views.vacation_automatic, name="vacation_automatic"),
    # Django's views (sign-in, sign-out and password reset with our limits and steps, in
    # account_views), with our templates in templates/registration/.
    path("login/", account_views.LoginView.as_view(), name="login"),
    path("logout/", account_views.LogoutView.as_view(), name="logout"),
    path(
        "password_change/",
        account_views.PasswordChangeView.as_view(),
        name="password_change",
    ),
    path(
        "password_change/done/",
        auth_views.PasswordChangeDoneView.as_view(),
        name="password_change_done",
    ),
    path("password_reset/", account_views.PasswordResetView.as_view(), name="password_reset"),
    path(
        "password_reset/done/",
        auth_views.PasswordResetDoneView.as_view(),
        name="password_reset_done",
    ),
    path(
        "reset/<uidb64>/<token>/",
        auth_views.PasswordResetConfirmView.as_view(form_class=NewPasswordForm),
        name="password_reset_confirm",
    ),
    path(
        "reset/done/",
        auth_views.PasswordResetCompleteView.as_view(),
        name="password_reset_complete",
    ),
]
