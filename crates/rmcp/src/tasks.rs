//! Task-augmented `tools/call` (the MCP Tasks extension): the call answers a task handle
//! (`CreateTaskResult`), and the CallToolResult comes later as the payload of `tasks/get`
//! (`GetTaskResult`, status `completed`). The layer shapes that payload under the tool's
//! rules, so it remembers which tool each task runs.

use std::collections::VecDeque;
use std::sync::Mutex;

/// Tasks remembered at most; the oldest is forgotten first (its payload is then shaped under
/// the default rules, which differ only when a config file has per-tool rules).
const MAX_TASKS: usize = 1024;

/// Task id → the tool its `tools/call` named.
#[derive(Debug, Default)]
pub(crate) struct TaskTools {
    tasks: Mutex<VecDeque<(String, String)>>,
}

impl TaskTools {
    /// Remembers that `task_id` runs `tool`.
    pub(crate) fn remember(&self, task_id: &str, tool: &str) {
        if let Ok(mut tasks) = self.tasks.lock() {
            if tasks.len() >= MAX_TASKS {
                tasks.pop_front();
            }
            tasks.push_back((task_id.to_owned(), tool.to_owned()));
        }
    }

    /// The tool `task_id` runs; empty when it is not known (a task of another session, or
    /// forgotten).
    pub(crate) fn tool_of(&self, task_id: &str) -> String {
        self.tasks
            .lock()
            .ok()
            .and_then(|tasks| {
                tasks
                    .iter()
                    .rev()
                    .find(|(id, _)| id == task_id)
                    .map(|(_, tool)| tool.clone())
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oldest_task_is_forgotten_first() {
        let t = TaskTools::default();
        for i in 0..=MAX_TASKS {
            t.remember(&format!("t{i}"), &format!("tool{i}"));
        }
        assert_eq!(t.tool_of("t0"), "");
        assert_eq!(t.tool_of("t1"), "tool1");
        assert_eq!(
            t.tool_of(&format!("t{MAX_TASKS}")),
            format!("tool{MAX_TASKS}")
        );
    }
}
