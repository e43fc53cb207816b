"""The transcript parser's version, alone so that a rebuild's "nothing changed" check
(:mod:`graphkit.builds.uptodate`) reads it without importing the parser or pyarrow."""

# Bump when parsing changes what a file yields: older cache entries are then ignored.
# 4: usage and continuation facts; 5: deep JSON lines are skipped lines; 6: one rows file;
# 7: rows left out at conversion are kept for every file (6's cache lost those of a read's
# last batch, so a warm read missed them) and link groups know a rollout with none left.
# 8: a Codex patch's files are under its call's ``workdir`` (or ``cd DIR &&``), which
# changes the touched_files of cached link groups; Claude's "<synthetic>" model is none;
# a Codex rollout whose header names no cwd takes its environment_context's.
# 9: a Codex patch follows the script's cd/pushd/popd, subshells and cds on their own
# lines (formats10), which changes the touched_files of cached link groups;
# thread_spawn's agent_type/agent_path are kept; a local_shell_call's patch is under its
# working_directory.
# 10: Codex tool_search_call/tool_search_output and image_generation_call are calls, a
# thread whose spawn_agent call asked for no history keeps its first message (formats11);
# link facts gain spawn_calls; a Claude server tool's result keeps its pages' titles and
# urls, and its error object is an error; an early Codex shell output with a nonzero
# metadata.exit_code is an error; sub_agent_activity events name spawned threads; a
# namespaced (MCP) call is named namespace + name; a Claude queued_command attachment is a
# user message; an output object's content items give their text; a fork's copy is found
# past the source's calls, outputs, reasoning and non-final answers it leaves out; a
# Codex token_count before the file's first answer only sets the baseline; Claude usage
# keeps its 1-hour cache writes (cache_creation_1h_input_tokens). Also (harden11): a line
# whose escaped lone surrogate is made U+FFFD is counted, so cached parses are counted too.
# 11: (queries12) a touched file has one spelling: ``//w/a`` is ``/w/a``, a drive letter is
# upper case, Unicode is NFC, and a call names each (op, file) once; which changes the
# touched_files of cached link groups.
# 12 (formats12): Claude lines of the "flat" shape (message fields at the top) are read;
# unknown Claude entry types, Codex line types and response_item types are skipped lines
# naming their type (were dropped unsaid); Codex agent_message items and
# inter_agent_communication lines (and such a message wrapped as an assistant one) are
# user messages; token_count's cache_write_input_tokens are cache writes (taken out of
# input); thread_rolled_back relinks the next message and counts rolled_back_turns.
# 13 (formats, issue 30): Claude 2.1.2xx session records (continued-in, cost-state,
# fork-context-ref, relocated, worktree-state) are facts, the other new records known (were
# skipped lines); a jobs/<id>/state.json is read for its fork fields. Codex: item_completed
# user turns are read; a history_base fork's records are its own; usage before the first
# answer counts (not in a fork), and usage with no answer gets a row; .jsonl.zst read.
# 14 (safety): an unknown record type or a repeated uuid named in a skipped line's
# reason is escaped and cut (cached reasons echoed it as written).
# 15 (billing, issue 30): Claude usage facts keep what Claude bills beyond the four counts
# (server_tool_use web searches, the advisor's iterations, a WebSearch result's
# searchCount on its call's message); cost-state keeps each model's counts.
PARSER_VERSION = 15
