package dev.layover.testing.provider;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.layover.testing.provider.FakeProvider.Api;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * What the fake provider reads of a request, in any of the four API shapes: the model, the last
 * user message (which decides the answer), the characters of all text sent (which decide the input
 * token count) and the output ceiling.
 *
 * @param api the API shape
 * @param model the model named in the body or path, or {@code null}
 * @param lastUserMessage the text of the last user message, "" when there is none
 * @param inputChars characters of every text sent: system prompt and all messages
 * @param maxTokens the output ceiling ({@code max_completion_tokens} / {@code max_tokens},
 *     {@code generationConfig.maxOutputTokens}, {@code inferenceConfig.maxTokens}), or {@code null}
 */
record FakeRequest(Api api, String model, String lastUserMessage, long inputChars, Integer maxTokens) {

    /** {@code /v1beta/models/gemini-2.5-flash:generateContent} (also {@code /v1/...}). */
    private static final Pattern GEMINI = Pattern.compile("/v1(?:beta|alpha)?/models/([^/:]+):generateContent");
    /** {@code /model/anthropic.claude-3-haiku-20240307-v1:0/converse} (the path as decoded by the server). */
    private static final Pattern BEDROCK = Pattern.compile("/model/([^/]+)/converse");

    /** The API a path (below the endpoint's prefix) belongs to, or {@code null} when it is none of them. */
    static Api route(String path) {
        if (path.equals("/v1/chat/completions")) {
            return Api.OPENAI_CHAT;
        }
        if (path.equals("/v1/messages")) {
            return Api.ANTHROPIC_MESSAGES;
        }
        if (GEMINI.matcher(path).matches()) {
            return Api.GEMINI_GENERATE_CONTENT;
        }
        if (BEDROCK.matcher(path).matches()) {
            return Api.BEDROCK_CONVERSE;
        }
        return null;
    }

    /** Reads a request; a body that is not JSON reads as empty. */
    static FakeRequest parse(Api api, String path, String body, ObjectMapper json) {
        JsonNode root;
        try {
            root = json.readTree(body == null || body.isBlank() ? "{}" : body);
        } catch (Exception notJson) {
            root = json.createObjectNode();
        }
        if (root == null || !root.isObject()) {
            root = json.createObjectNode();
        }
        return switch (api) {
            case OPENAI_CHAT -> openAi(root, json);
            case ANTHROPIC_MESSAGES -> anthropic(root, json);
            case GEMINI_GENERATE_CONTENT -> gemini(root, path, json);
            case BEDROCK_CONVERSE -> bedrock(root, path, json);
        };
    }

    private static FakeRequest openAi(JsonNode root, ObjectMapper json) {
        Texts t = new Texts();
        for (JsonNode m : root.path("messages")) {
            t.message(m.path("role").asText(""), content(m.get("content"), json));
        }
        Integer max = integer(root.get("max_completion_tokens"));
        if (max == null) {
            max = integer(root.get("max_tokens"));
        }
        return new FakeRequest(Api.OPENAI_CHAT, text(root.get("model")), t.lastUser, t.chars, max);
    }

    private static FakeRequest anthropic(JsonNode root, ObjectMapper json) {
        Texts t = new Texts();
        t.system(content(root.get("system"), json));
        for (JsonNode m : root.path("messages")) {
            t.message(m.path("role").asText(""), content(m.get("content"), json));
        }
        return new FakeRequest(Api.ANTHROPIC_MESSAGES, text(root.get("model")), t.lastUser, t.chars,
                integer(root.get("max_tokens")));
    }

    private static FakeRequest gemini(JsonNode root, String path, ObjectMapper json) {
        Texts t = new Texts();
        t.system(parts(root.path("systemInstruction").path("parts")));
        for (JsonNode c : root.path("contents")) {
            String role = c.path("role").asText("user");
            t.message(role.equals("model") ? "assistant" : role, parts(c.path("parts")));
        }
        Matcher m = GEMINI.matcher(path);
        String model = m.matches() ? m.group(1) : null;
        return new FakeRequest(Api.GEMINI_GENERATE_CONTENT, model, t.lastUser, t.chars,
                integer(root.path("generationConfig").get("maxOutputTokens")));
    }

    private static FakeRequest bedrock(JsonNode root, String path, ObjectMapper json) {
        Texts t = new Texts();
        t.system(parts(root.path("system")));
        for (JsonNode m : root.path("messages")) {
            t.message(m.path("role").asText(""), parts(m.path("content")));
        }
        Matcher m = BEDROCK.matcher(path);
        String model = m.matches() ? m.group(1) : null;
        return new FakeRequest(Api.BEDROCK_CONVERSE, model, t.lastUser, t.chars,
                integer(root.path("inferenceConfig").get("maxTokens")));
    }

    /** OpenAI and Anthropic content: a string, or blocks whose {@code text} count; anything else as JSON. */
    private static String content(JsonNode c, ObjectMapper json) {
        if (c == null || c.isNull() || c.isMissingNode()) {
            return "";
        }
        if (c.isTextual()) {
            return c.asText();
        }
        if (c.isArray()) {
            StringBuilder b = new StringBuilder();
            for (JsonNode block : c) {
                if (block.isTextual()) {
                    b.append(block.asText());
                } else if (block.has("text")) {
                    b.append(block.get("text").asText());
                }
            }
            return b.toString();
        }
        try {
            return json.writeValueAsString(c);
        } catch (Exception e) {
            return "";
        }
    }

    /** Gemini parts and Bedrock content blocks: the {@code text} of each. */
    private static String parts(JsonNode parts) {
        StringBuilder b = new StringBuilder();
        for (JsonNode p : parts) {
            if (p.has("text")) {
                b.append(p.get("text").asText());
            }
        }
        return b.toString();
    }

    private static String text(JsonNode n) {
        return n != null && n.isTextual() ? n.asText() : null;
    }

    private static Integer integer(JsonNode n) {
        return n != null && n.canConvertToInt() && n.asInt() > 0 ? n.asInt() : null;
    }

    /** Accumulates the texts of a conversation. */
    private static final class Texts {
        long chars;
        String lastUser = "";

        void system(String text) {
            chars += text.length();
        }

        void message(String role, String text) {
            chars += text.length();
            if (role.equals("user")) {
                lastUser = text;
            }
        }
    }
}
