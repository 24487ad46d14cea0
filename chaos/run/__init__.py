"""Running locks against faults, from one seeded run to a whole comparison.

* ``campaign`` — one lock × its faults × one seed → a run directory (history, verdict,
  schedule, campaign.json, reports). ``Campaign.from_options`` is the one translation from
  command-line options (``run``, ``explore``, the pytest plugin, ``compare``'s cells) to a
  ``Campaign``; ``run_campaign`` runs it on a fresh topology.
* ``compare`` — locks × fault columns, a campaign per cell and seed → ``matrix.json`` and
  the pages built from it (``lockchaos compare`` and ``demo``).
* ``search`` — ``lockchaos run --search N``: Hypothesis draws fault schedules for a campaign
  and shrinks a failing one.
* ``truth_table`` — what the seed posts, Kleppmann and the Redis docs claim about each lock,
  as judges of a ``Verdict``; ``compare`` marks its cells with them and the tests run them.
"""

from chaos.run.campaign import Campaign, Outcome, run_campaign

__all__ = ["Campaign", "Outcome", "run_campaign"]
