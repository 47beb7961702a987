"""The off-policy user-choice simulator of Zhang et al. 2022 and its shared foundation.

- ``logged``: a prepared logged dataset (MIND / MovieLens-logged) as integer arrays, the known split, click rows;
- ``encoders``: the light two-tower click model (simulator and learners each have their own instance);
- ``ips``: empirical propensities, the IPS-weighted logistic loss, propensity summaries (ESS);
- ``propensity``: the learned logistic propensity model (``--propensity learned``);
- ``train``: `banditbench simulator train` (fit, validate, save next to the prepared data);
- ``model``: ``Simulator.load(dataset)`` for environments: click probabilities, thresholded clicks with flips.
"""
