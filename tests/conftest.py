import os

from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=int(os.environ.get("RYZEN_NB_HYPOTHESIS_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=True,
)
settings.load_profile("ci")

# the browser test opens this notebook in JupyterLab; nbval must not run it on its own
collect_ignore_glob = ["ui/browser/*.ipynb"]

# Jupyter server fixtures (jp_fetch, jp_root_dir...) for the JupyterLab extension tests in tests/lab
pytest_plugins = ["pytest_jupyter.jupyter_server"]
