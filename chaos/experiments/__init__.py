"""Running locks against faults, from one seeded run to a whole comparison.

* ``execute`` — one campaign (``chaos.campaign.Campaign``: a lock × its faults × one seed)
  → a run directory (history, verdict, schedule, campaign.json, reports): ``run_campaign``
  runs it on a fresh topology.
* ``compare`` — locks × fault columns, a campaign per cell and seed → ``matrix.json`` and
  the pages built from it (``lockchaos compare`` and ``demo``).
* ``search`` — ``lockchaos run --search N``: Hypothesis draws fault schedules for a campaign
  and shrinks a failing one.
* ``audit`` — ``lockchaos audit``: campaigns of every fault a lock must survive, then
  ``explore``, within a time budget; one verdict.
* ``shard`` — a comparison split across machines (``--shard K/N``) and joined again.
* ``truth_table`` — what the seed posts, Kleppmann and the Redis docs claim about each lock,
  as judges of a ``Verdict``; ``compare`` marks its cells with them and the tests run them.
"""

from chaos.experiments.execute import Outcome, run_campaign

__all__ = ["Outcome", "run_campaign"]
