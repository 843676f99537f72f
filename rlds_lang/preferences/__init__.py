"""Preference clips and judgements (Christiano et al. 2017): clip and label types, segmenting a stream of steps,
the dm_env wrapper serving a true or learned reward, labellers, pair selection and the label databases."""
