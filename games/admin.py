from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import AdminUserCreationForm, UserChangeForm
from django.contrib.auth.models import User
from django.db.models import Count, QuerySet
from django.http import HttpRequest

from games.accounts import profiles
from games.mail import outbox
from games.models import (
    ChatMessage,
    ChatMute,
    ChatReport,
    EmailPreferences,
    Game,
    Move,
    Outbox,
    Profile,
    Rating,
    Reminder,
    Seat,
    users_named,
)
from games.play import core


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0
    fields = ["index", "user", "bot", "deadline", "place", "joined_at"]
    # A deadline is moved on the seat's own page, through the one service that writes it.
    readonly_fields = ["deadline"]
    raw_id_fields = ["user"]
    show_change_link = True


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "clock", "ply", "created_at", "finished_at"]
    list_filter = ["kind", "status", "clock"]
    search_fields = ["id", "seats__user__username"]
    readonly_fields = ["seed_sha256", "ply", "version", "state", "created_at"]
    inlines = [SeatInline]
    date_hierarchy = "created_at"


class SeatAdminForm(forms.ModelForm):
    class Meta:
        model = Seat
        fields = [
            "game",
            "index",
            "user",
            "bot",
            "deadline",
            "place",
            "joined_at",
            "ready_at",
            "finished_at",
        ]

    def clean_deadline(self) -> Any:
        deadline = self.cleaned_data.get("deadline")
        seat = self.instance
        if seat.pk is not None and deadline != seat.deadline:
            try:
                core.deadline_move_check(game=seat.game, seat=seat, deadline=deadline)
            except core.GameError as exc:
                raise forms.ValidationError(str(exc)) from None
        return deadline


@admin.register(Seat)
class SeatAdmin(admin.ModelAdmin):
    """A seat to move can have its deadline moved here, earlier or later; its reminder follows
    (`play.core.seat_deadline_move`)."""

    form = SeatAdminForm
    list_display = ["game", "index", "user", "bot", "deadline", "place"]
    list_filter = ["bot"]
    raw_id_fields = ["game", "user"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        if obj is None:
            return ["deadline"]  # a new seat gets a deadline when its turn starts
        return super().get_readonly_fields(request, obj)

    def save_model(self, request: HttpRequest, obj: Seat, form: Any, change: bool) -> None:
        if not change or "deadline" not in form.changed_data:
            super().save_model(request, obj, form, change)
            return
        assert obj.deadline is not None  # SeatAdminForm.clean_deadline
        try:
            core.seat_deadline_move(
                game_id=obj.game_id, seat_index=obj.index, deadline=obj.deadline
            )
        except core.GameError as exc:  # the game moved on since the form was checked
            self.message_user(request, f"The deadline was not moved: {exc}", messages.ERROR)
        others = [name for name in form.changed_data if name != "deadline"]
        if others:
            obj.save(update_fields=others)


@admin.register(Move)
class MoveAdmin(admin.ModelAdmin):
    list_display = ["game", "ply", "seat", "at"]
    raw_id_fields = ["game"]
    readonly_fields = ["game", "ply", "seat", "at", "move", "outcome"]


@admin.register(Profile)
class ProfileAdmin(admin.ModelAdmin):
    list_display = ["user", "is_guest", "email_verified"]
    list_filter = ["is_guest", "email_verified"]
    raw_id_fields = ["user"]


@admin.register(Outbox)
class OutboxAdmin(admin.ModelAdmin):
    """What was sent, when, to whom; a stuck (pending or failed) mail can be sent again."""

    list_display = [
        "id",
        "kind",
        "user",
        "to_email",
        "game",
        "seat",
        "ply",
        "status",
        "attempts",
        "next_try_at",
        "created_at",
        "sent_at",
    ]
    list_filter = ["status", "kind"]
    search_fields = ["user__username", "to_email", "=game__id"]
    date_hierarchy = "created_at"
    raw_id_fields = ["game", "user"]
    readonly_fields = [
        "kind",
        "user",
        "game",
        "seat",
        "ply",
        "day",
        "status",
        "to_email",
        "subject",
        "attempts",
        "note",
        "created_at",
        "next_try_at",
        "sent_at",
    ]
    actions = ["resend"]

    @admin.action(description="Send the selected stuck mails again (pending or failed)")
    def resend(self, request: HttpRequest, queryset: QuerySet[Outbox]) -> None:
        count = outbox.outbox_resend(outbox_ids=queryset.values_list("pk", flat=True))
        self.message_user(request, f"{count} mail(s) queued again; sent or skipped ones are left.")

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


@admin.register(Reminder)
class ReminderAdmin(admin.ModelAdmin):
    list_display = ["seat", "ply", "due"]
    raw_id_fields = ["seat"]


@admin.register(EmailPreferences)
class EmailPreferencesAdmin(admin.ModelAdmin):
    list_display = ["user", "turn_mails", "reminder", "game_over"]
    list_filter = ["turn_mails", "reminder", "game_over"]
    raw_id_fields = ["user"]


# Ratings are kept by play's game_end and `manage.py ratings_recompute`: read-only here.
@admin.register(Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = ["id", "user", "bot", "kind", "mu", "sigma", "games"]
    list_filter = ["kind"]
    search_fields = ["user__username", "bot"]
    raw_id_fields = ["user"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# --- the chat --------------------------------------------------------------------------------


class ReportedFilter(admin.SimpleListFilter):
    title = "reported"
    parameter_name = "reported"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("yes", "Reported"), ("no", "Not reported")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(reports__isnull=False).distinct()
        if self.value() == "no":
            return queryset.filter(reports__isnull=True)
        return queryset


class ChatReportInline(admin.TabularInline):
    model = ChatReport
    extra = 0
    fields = ["reporter", "created_at"]
    readonly_fields = ["reporter", "created_at"]
    can_delete = True


@admin.register(ChatMessage)
class ChatMessageAdmin(admin.ModelAdmin):
    list_display = ["id", "game", "author", "channel", "text", "created_at", "report_count"]
    list_filter = [ReportedFilter, "channel"]
    search_fields = ["text", "author__username"]
    raw_id_fields = ["game", "author"]
    readonly_fields = ["created_at"]
    inlines = [ChatReportInline]
    list_select_related = ["game", "author"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return super().get_queryset(request).annotate(report_total=Count("reports"))

    @admin.display(description="reports", ordering="report_total")
    def report_count(self, obj: Any) -> int:
        return int(obj.report_total)


@admin.register(ChatReport)
class ChatReportAdmin(admin.ModelAdmin):
    list_display = ["id", "message", "reporter", "created_at"]
    raw_id_fields = ["message", "reporter"]
    list_select_related = ["message__author", "message__game", "reporter"]


@admin.register(ChatMute)
class ChatMuteAdmin(admin.ModelAdmin):
    list_display = ["user", "muted", "created_at"]
    raw_id_fields = ["user", "muted"]


# --- users: names unique but for case, in any script (UsernameKey) -----------------------------


def _name_free(form: forms.ModelForm[User]) -> str:
    name: str = form.cleaned_data["username"]
    if users_named(name).exclude(pk=form.instance.pk).exists():
        raise forms.ValidationError(profiles.USERNAME_TAKEN)
    return name


class NewUserForm(AdminUserCreationForm):
    def clean_username(self) -> str:
        super().clean_username()
        return _name_free(self)


class ChangedUserForm(UserChangeForm):
    def clean_username(self) -> str:
        return _name_free(self)


admin.site.unregister(User)


@admin.register(User)
class NameCheckedUserAdmin(UserAdmin):
    add_form = NewUserForm
    form = ChangedUserForm
