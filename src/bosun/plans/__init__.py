"""Plans: many tasks as a dependency graph, run in parallel waves, merged through an integration branch.

``model`` parses a plan file, ``validate`` checks the graph and the write scopes and computes the
waves, ``runner`` executes a plan (and resumes, continues, cancels, aborts it), ``integration`` merges
task runs into the plan's integration branch and lands the result on the source branch, ``events``
is the stream ``bosun plan watch`` follows, ``status`` the ``--json`` object. All SQL is in
:mod:`bosun.store.plans`.
"""
