package dev.layover.core.tokens;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The jtokkit counter against the counts OpenAI's API reported in OpenAI's cookbook. */
@PureTest
class OpenAiTokenCounterTest {

    /**
     * The example of "How to count tokens with tiktoken", section 6
     * (https://github.com/openai/openai-cookbook/blob/main/examples/How_to_count_tokens_with_tiktoken.ipynb),
     * whose prompt the API reported as 129 tokens on gpt-4-0613 and 124 on gpt-4o and gpt-4o-mini.
     */
    static final List<ChatMessage> COOKBOOK = List.of(
            ChatMessage.system("You are a helpful, pattern-following assistant that translates corporate jargon "
                    + "into plain English."),
            new ChatMessage("system", "New synergies will help drive top-line growth.", "example_user"),
            new ChatMessage("system", "Things working well together will increase revenue.", "example_assistant"),
            new ChatMessage("system", "Let's circle back when we have more bandwidth to touch base on opportunities "
                    + "for increased leverage.", "example_user"),
            new ChatMessage("system", "Let's talk later when we're less busy about how to do better.",
                    "example_assistant"),
            ChatMessage.user("This late pivot means we don't have time to boil the ocean for the client "
                    + "deliverable."));

    @Test
    void chatPromptMatchesThePromptTokensTheApiReported() {
        assertEquals(129, TokenEstimator.openAi("gpt-4-0613").messageTokens(COOKBOOK));
        assertEquals(124, TokenEstimator.openAi("gpt-4o").messageTokens(COOKBOOK));
        assertEquals(124, TokenEstimator.openAi("gpt-4o-mini-2024-07-18").messageTokens(COOKBOOK));
    }

    @Test
    void textIsCountedByTheModelsEncoding() {
        // the cookbook's encoding comparison: "antidisestablishmentarianism" is 6 tokens in cl100k_base
        assertEquals(6, OpenAiTokenCounter.forEncoding("cl100k_base").textTokens("antidisestablishmentarianism"));
        assertEquals(7, OpenAiTokenCounter.forEncoding("cl100k_base").textTokens("2 + 2 = 4"));
        assertEquals(9, OpenAiTokenCounter.forEncoding("cl100k_base").textTokens("お誕生日おめでとう"));
        assertEquals(5, OpenAiTokenCounter.forEncoding("p50k_base").textTokens("antidisestablishmentarianism"));
    }

    @Test
    void modelFamiliesMapToTheirEncodings() {
        for (String m : List.of("gpt-4o", "gpt-4o-mini-2024-07-18", "chatgpt-4o-latest", "gpt-4.1-nano", "gpt-4.5-preview",
                "o1", "o1-mini", "o3-mini-2025-01-31", "o4-mini", "gpt-5", "gpt-5-mini", "GPT-5.1",
                "ft:gpt-4o-mini-2024-07-18:acme::9sXQ", "openai/gpt-4.1", "some-future-model", "", "  ")) {
            assertEquals(OpenAiTokenCounter.O200K_BASE, OpenAiTokenCounter.encodingFor(m), m);
        }
        for (String m : List.of("gpt-4", "gpt-4-0613", "gpt-4-turbo", "gpt-4-32k", "gpt-3.5-turbo", "gpt-35-turbo",
                "text-embedding-3-small", "text-embedding-ada-002", "ft:gpt-3.5-turbo-0125:acme::abc")) {
            assertEquals(OpenAiTokenCounter.CL100K_BASE, OpenAiTokenCounter.encodingFor(m), m);
        }
        assertEquals(OpenAiTokenCounter.O200K_BASE, OpenAiTokenCounter.encodingFor(null));
        assertEquals("o200k_base", TokenEstimator.openAi("gpt-4o").toString().replaceAll(".*\\[|\\]", ""));
    }

    @Test
    void specialTokenTextIsCountedAsPlainTextAndNullAsNothing() {
        OpenAiTokenCounter c = OpenAiTokenCounter.forModel("gpt-4o");
        assertTrue(c.textTokens("<|endoftext|>") > 1, "a user's text cannot end the prompt");
        assertEquals(0, c.textTokens(null));
        assertEquals(0, c.textTokens(""));
        assertEquals(OpenAiTokenCounter.REPLY_PRIMING, c.messageTokens(null));
        assertEquals(OpenAiTokenCounter.REPLY_PRIMING, c.messageTokens(List.of()));
        assertEquals(c.messageTokens(List.of(ChatMessage.user("hi"))),
                c.messageTokens(java.util.Arrays.asList(ChatMessage.user("hi"), null)));
        assertEquals(3 + 3 + 1 + 0, c.messageTokens(List.of(ChatMessage.user(null))), "user is one token");
    }

    @Test
    void unknownEncodingIsRefusedByName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> OpenAiTokenCounter.forEncoding("o300k_base"));
        assertEquals("unknown encoding o300k_base", e.getMessage());
        assertThrows(NullPointerException.class, () -> new ChatMessage(null, "x", null));
    }
}
