#pragma once
// A model's answer taken apart into reasoning, text and tool calls, for every tool-call syntax the
// supported models write: Qwen/Hermes <tool_call>{"name": ..., "arguments": ...}</tool_call>
// blocks and MiniMax-M3's ]<]minimax[>[<tool_call> XML (parseMiniMaxM3Output). The agent's tool
// parser and `iris serve` both read answers through it, so they cannot disagree on what a call is.

#include <string>
#include <string_view>
#include <vector>

#include "inference/chat_template.h"

namespace iris::inference {

struct AnswerToolCall {
    // Why a Qwen block is not a call (MiniMax-M3 calls that do not parse are left out and
    // reported in ModelAnswer::errors instead).
    enum class Problem { None, NotAnObject, MissingName };
    // The name, and the arguments as JSON text: an object as compact JSON, a string argument
    // verbatim (Hermes models sometimes quote the object), empty when the model gave none.
    ChatToolCall call;
    Problem problem = Problem::None;
    std::string body;  // Qwen blocks: the text between the tags, for error messages
};

struct ModelAnswer {
    std::string reasoning;  // MiniMax-M3's <mm:think> text, trimmed; empty for other answers
    std::string content;    // the text outside reasoning and tool calls (not trimmed)
    std::vector<AnswerToolCall> toolCalls;  // in the order written: MiniMax-M3's, then Qwen's
    std::vector<std::string> errors;        // MiniMax-M3 XML problems, "byte 57: ..."
};

// Parses `text` (what the model generated after the generation prompt). An answer that carries
// MiniMax-M3's markers goes through parseMiniMaxM3Output first (with `toolsJson` typing the
// parameters); Qwen blocks are then read in what is left, since a model may fall back to the more
// common syntax. A last Qwen block may lack its closing tag when generation stopped there. Never
// fails and never throws: any bytes parse.
ModelAnswer parseModelAnswer(std::string_view text, const std::vector<std::string>& toolsJson);

}  // namespace iris::inference
