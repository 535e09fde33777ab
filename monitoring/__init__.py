"""Drift detectors, review sampling and agreement statistics.

Drift monitoring (pure and in memory: no I/O, no clock; import the modules, this
package imports nothing so that ``import monitoring`` stays cheap):

- :mod:`arbiter.monitoring.drift`: ``DriftMonitor`` (rewards in, alerts opened and closed
  out, open alerts as reward flags, a persistable ``DriftState``).
- :mod:`arbiter.monitoring.drift_input`: ``RewardBatch`` / ``ComponentScores`` columns, and
  ``batch_from_rewards`` for reward objects.
- :mod:`arbiter.monitoring.drift_alerts`: ``Alert``, ``Detector``, ``StreamKey``,
  ``ReferenceSummary``, ``DriftUpdate``.
- :mod:`arbiter.monitoring.drift_config`: ``DriftConfig``, the thresholds (a rubric's
  ``drift`` section).
- :mod:`arbiter.monitoring.drift_statistics`: the statistics (CUSUM, Holm, BH, bootstrap
  at the window size, two-proportion z, Fisher z, Fisher's exact test of a rising rate).
- :mod:`arbiter.monitoring.hack_rates`: the rate streams (each violation type, groups whose
  rewards all agree, canary passes).
"""

#: The public modules: this package re-exports nothing, so importing it stays cheap.
__all__ = [
    "agreement",
    "drift",
    "drift_alerts",
    "drift_config",
    "drift_incidents",
    "drift_input",
    "drift_statistics",
    "hack_rates",
    "regressions",
    "sampling",
]
