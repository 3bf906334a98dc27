import os

from hypothesis import HealthCheck, settings

# Seeded and repeatable: the same examples on every run, in CI and on laptops alike.
settings.register_profile(
    "default",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
