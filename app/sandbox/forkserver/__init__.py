"""The fork server: a process that has imported the SDK and every demo server, and forks instances.

Started by app.sandbox.launcher as `python -m app.sandbox.forkserver CONFIG_JSON` (`__main__.py`),
it talks to the app over one socket. `protocol.py`: the messages and the check every request passes;
`server.py`: start-up, the loop, reaping and cgroups; `child.py`: which layers hold here and each
instance's confinement, from its fork to its server. docs/sandbox.md.
"""
