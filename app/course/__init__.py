"""Lessons as data: the format, the catalog, quizzes, hands-on checks and exercises (docs/authoring.md).

The course knows no process and no wire: exercises talk to a server through `conversation.ServerLines`.
"""
