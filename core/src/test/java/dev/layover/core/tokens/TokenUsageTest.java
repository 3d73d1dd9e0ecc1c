package dev.layover.core.tokens;

import dev.layover.core.provider.TokenDimension;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.core.provider.Provider;
import dev.layover.testing.PureTest;
import org.junit.jupiter.api.Test;

/** Each provider's documented counting rule, applied to one call's usage. */
@PureTest
class TokenUsageTest {

    @Test
    void openAiPromptTokensIncludeTheCachedOnesAndAllCountAgainstTpm() {
        // prompt_tokens 2006 of which 1920 cached, completion_tokens 300 (reasoning inside)
        TokenUsage u = new TokenUsage(Provider.OPENAI, 2006, 300, 1920, 0);
        assertTrue(u.inputIncludesCache());
        assertEquals(2006, u.totalInputTokens());
        assertEquals(86, u.uncachedInputTokens());
        assertEquals(2306, u.totalTokens());
        assertEquals(2306, u.tokensFor(TokenDimension.TOKENS));
        assertEquals(2006, u.tokensFor(TokenDimension.INPUT_TOKENS));
        assertEquals(300, u.tokensFor(TokenDimension.OUTPUT_TOKENS));
    }

    @Test
    void anthropicInputTokensExcludeCacheReadsAndWritesAndReadsDoNotCountAgainstItpm() {
        // input_tokens 50, cache_creation_input_tokens 1000, cache_read_input_tokens 4000
        TokenUsage u = new TokenUsage(Provider.ANTHROPIC, 50, 200, 4000, 1000);
        assertFalse(u.inputIncludesCache());
        assertEquals(5050, u.totalInputTokens());
        assertEquals(1050, u.uncachedInputTokens());
        assertEquals(1050, u.tokensFor(TokenDimension.INPUT_TOKENS));
        assertEquals(200, u.tokensFor(TokenDimension.OUTPUT_TOKENS));
        assertEquals(1250, u.tokensFor(TokenDimension.TOKENS));
        // the older models marked in Anthropic's table count cache reads too
        assertEquals(5050, u.tokensFor(TokenDimension.INPUT_TOKENS, new CountingRule(true, 1)));
    }

    @Test
    void geminiPromptIncludesCachedContentAndAllInputCounts() {
        TokenUsage u = new TokenUsage(Provider.GEMINI, 3000, 500, 2048, 0);
        assertEquals(3000, u.totalInputTokens());
        assertEquals(952, u.uncachedInputTokens());
        assertEquals(3000, u.tokensFor(TokenDimension.INPUT_TOKENS));
        assertEquals(3500, u.tokensFor(TokenDimension.TOKENS));
    }

    @Test
    void bedrockCountsCacheWritesNotReadsAndAppliesTheOutputBurndown() {
        TokenUsage u = new TokenUsage(Provider.BEDROCK, 100, 40, 900, 300);
        assertEquals(1300, u.totalInputTokens());
        assertEquals(400, u.tokensFor(TokenDimension.INPUT_TOKENS));
        assertEquals(440, u.tokensFor(TokenDimension.TOKENS));
        // Claude Sonnet 4 on Bedrock: one output token uses five of the TPM quota
        assertEquals(600, u.tokensFor(TokenDimension.TOKENS, new CountingRule(false, 5)));
        assertEquals(40, u.tokensFor(TokenDimension.OUTPUT_TOKENS, new CountingRule(false, 5)));
    }

    @Test
    void defaultRulesFollowTheProvider() {
        assertEquals(new CountingRule(true, 1), CountingRule.of(Provider.OPENAI));
        assertEquals(new CountingRule(true, 1), CountingRule.of(Provider.AZURE_OPENAI));
        assertEquals(new CountingRule(false, 1), CountingRule.of(Provider.ANTHROPIC));
        assertEquals(new CountingRule(false, 1), CountingRule.of(Provider.ANTHROPIC_BEDROCK));
        assertEquals(new CountingRule(false, 1), CountingRule.of(Provider.BEDROCK));
        assertEquals(new CountingRule(true, 1), CountingRule.of(Provider.GEMINI));
        assertEquals(new CountingRule(true, 1), CountingRule.of(null));
    }

    @Test
    void countsOutOfRangeAreRefusedWithTheirName() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> new TokenUsage(Provider.OPENAI, -1, 0, 0, 0));
        assertEquals("inputTokens must be 0 to 1000000000, was -1", e.getMessage());
        e = assertThrows(IllegalArgumentException.class,
                () -> new TokenUsage(Provider.ANTHROPIC, 0, TokenUsage.MAX_COUNT + 1, 0, 0));
        assertEquals("outputTokens must be 0 to 1000000000, was 1000000001", e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> new TokenUsage(Provider.GEMINI, 0, 0, Long.MIN_VALUE, 0));
        assertThrows(IllegalArgumentException.class, () -> new TokenUsage(Provider.GEMINI, 0, 0, 0, Long.MAX_VALUE));
        assertThrows(NullPointerException.class, () -> new TokenUsage(null, 0, 0, 0, 0));
        assertThrows(IllegalArgumentException.class, () -> new CountingRule(true, 0));
        assertThrows(IllegalArgumentException.class, () -> new CountingRule(true, 101));
        assertEquals(TokenUsage.MAX_COUNT * 101,
                new TokenUsage(Provider.BEDROCK, TokenUsage.MAX_COUNT, TokenUsage.MAX_COUNT, 0, 0)
                        .tokensFor(TokenDimension.TOKENS, new CountingRule(false, 100)));
    }

    @Test
    void cachedCountLargerThanAnOpenAiPromptNeverGivesANegativeCount() {
        TokenUsage odd = new TokenUsage(Provider.OPENAI, 10, 5, 50, 0);
        assertEquals(0, odd.uncachedInputTokens());
        assertEquals(5, odd.tokensFor(TokenDimension.TOKENS, new CountingRule(false, 1)));
    }

    @Test
    void maxMergesCumulativeStreamReadingsInTheFirstProvidersConvention() {
        TokenUsage start = new TokenUsage(Provider.ANTHROPIC, 25, 1, 100, 0);
        TokenUsage delta = new TokenUsage(Provider.ANTHROPIC, 0, 57, 0, 0);
        assertEquals(new TokenUsage(Provider.ANTHROPIC, 25, 57, 100, 0), start.max(delta));
        assertSame(start, start.max(null));
        // an OpenAI-convention reading of the same call: 125 prompt tokens, 100 of them cached
        TokenUsage openAiShaped = new TokenUsage(Provider.OPENAI, 125, 60, 100, 0);
        assertEquals(new TokenUsage(Provider.ANTHROPIC, 25, 60, 100, 0), start.max(openAiShaped));
    }
}
