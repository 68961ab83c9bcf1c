"""Runs a LiteLLM proxy for the tests and ends it when the test process goes away.

argv[1:] is the proxy command. The test keeps this script's stdin open; when that pipe
closes (the test binary exited, however it exited) the proxy is terminated, so no proxy
outlives the test run.
"""
import subprocess
import sys

proxy = subprocess.Popen(sys.argv[1:], stdin=subprocess.DEVNULL)
try:
    sys.stdin.buffer.read()
finally:
    proxy.terminate()
    try:
        proxy.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proxy.kill()
