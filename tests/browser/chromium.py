"""How to launch Debian's Chromium on these machines (shared by the browser tests and the browser benchmark)."""

CHROMIUM = "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps trying the closed network.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--disable-quic",
    "--disable-dev-shm-usage",
]
