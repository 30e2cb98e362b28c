"""How sure a link is: features of a decision, their calibration into the probability that the
link is right, the label-free data such a calibration can be fitted on, and the metrics that
say whether a confidence means what it claims."""
