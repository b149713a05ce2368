"""``tether eval``: does the agent get the job done, and nothing else? Tasks (``evals/<suite>/*.yaml``)
run against a real server on a fresh copy of the seeded data; each trial is checked for the facts
its answer must carry, the end state of the business data against a reference run, the forms and
filters its reads used, and the safety assertions that hold for every task whatever the model
does. Scores are pass^k (τ-bench's estimator). See docs/evals.md.
"""
