"""The interactive REPL (`dpsql`): a thin prompt_toolkit front end over one Session (docs/deployment.md).

Modules: `script` splits input into statements and backslash commands, `completion` suggests
words from the policy, `commands` answers backslash commands, `runner` runs one item (with the
confirmation prompt and timing), `toolbar` is the bottom line, `keys` the key bindings and
`app` the prompt loop.
"""
