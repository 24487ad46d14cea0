"""What main wrote at c1d70ce, before fault timing had one generator: the tests that pin
a saved run's fault timing (tests/pure/test_fault_timing_pins.py) and replay it
(tests/redis/test_schedule_replay.py) read it from here."""

# What ``lockchaos run --lock lua --faults client-pause,partition --duration 5 --seed 3``
# wrote as schedule.json at c1d70ce, byte for byte.
SMOKE_SCHEDULE = """{
  "seed": 3,
  "events": [
    {
      "at_s": 0.437,
      "fault": "partition",
      "params": {
        "duration_ms": 478,
        "scope": "majority"
      }
    },
    {
      "at_s": 1.599,
      "fault": "client-pause",
      "params": {
        "duration_ms": 474
      }
    },
    {
      "at_s": 2.837,
      "fault": "partition",
      "params": {
        "duration_ms": 945,
        "scope": "minority"
      }
    },
    {
      "at_s": 4.337,
      "fault": "client-pause",
      "params": {
        "duration_ms": 370
      }
    }
  ]
}
"""
