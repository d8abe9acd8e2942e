from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('games', '0007_lobby_active_index'),
    ]

    operations = [
        migrations.AddField(
            model_name='profile',
            name='calendar_key',
            field=models.CharField(blank=True, max_length=32),
        ),
    ]
