"""The figures stage: the study's Figures 3 and 4, the models' accuracy and their validation (rules
figures_collective, figures_accuracy, figures_validation), and what every figure shares (:mod:`.style`)."""
