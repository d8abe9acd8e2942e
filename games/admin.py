from __future__ import annotations

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest

from . import notifications
from .models import EmailPreferences, Game, Move, Outbox, Profile, Reminder, Seat


class SeatInline(admin.TabularInline):
    model = Seat
    extra = 0
    fields = ["index", "user", "bot", "deadline", "place", "joined_at"]
    raw_id_fields = ["user"]


@admin.register(Game)
class GameAdmin(admin.ModelAdmin):
    list_display = ["id", "kind", "status", "clock", "ply", "created_at", "finished_at"]
    list_filter = ["kind", "status", "clock"]
    search_fields = ["id", "seats__user__username"]
    readonly_fields = ["seed_sha256", "ply", "version", "state", "created_at"]
    inlines = [SeatInline]
    date_hierarchy = "created_at"


@admin.register(Seat)
class SeatAdmin(admin.ModelAdmin):
    list_display = ["game", "index", "user", "bot", "deadline", "place"]
    list_filter = ["bot"]
    raw_id_fields = ["game", "user"]


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
        "queued_at",
        "sent_at",
    ]
    actions = ["resend"]

    @admin.action(description="Send the selected stuck mails again (pending or failed)")
    def resend(self, request: HttpRequest, queryset: QuerySet[Outbox]) -> None:
        count = notifications.outbox_resend(outbox_ids=queryset.values_list("pk", flat=True))
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
