package dev.layover.core.tokens;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.util.List;
import org.junit.jupiter.api.Test;

/** Properties of the text estimate; its error against real tokenizers is in EstimateErrorTest. */
@PureTest
class TextEstimatorTest {

    static final TextEstimator E = TextEstimator.defaults();

    @Test
    void emptyAndNullAreZeroAndNothingIsNegative() {
        assertEquals(0, E.textTokens(null));
        assertEquals(0, E.textTokens(""));
        assertEquals(0, E.textTokens(" "));
        for (String s : List.of("a", ".", "\n", "\uD83D", "\uDE00", "\u0301", "\u0000", "\uFFFF", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢")) {
            assertTrue(E.textTokens(s) >= 1, s);
        }
    }

    @Test
    void scriptsCostWhatTokenizersSpendOnThem() {
        // one short English word is one token; a Chinese sentence about one per character
        assertEquals(1, E.textTokens("hello"));
        assertEquals(2, E.textTokens("hello world"));
        long zh = E.textTokens("我们必须在本周末之前把报告交给经理");
        assertTrue(zh >= 12 && zh <= 20, "zh " + zh);
        assertEquals(4, E.textTokens("1234567890"), "digits in threes");
        assertTrue(E.textTokens("🚉✅🎉") >= 6, "emoji are several tokens each");
        // a decomposed accent stays in its word
        assertEquals(E.textTokens("caf\u00e9"), E.textTokens("cafe\u0301"));
    }

    @Test
    void longTextsGrowInProportion() {
        String sentence = "The morning train to the coast was late again, so we waited in the cafe. ";
        long one = E.textTokens(sentence);
        long hundred = E.textTokens(sentence.repeat(100));
        assertTrue(Math.abs(hundred - 100 * one) <= 100, one + " x100 vs " + hundred);
        assertTrue(E.textTokens("x".repeat(1_000_000)) > 100_000);
    }

    @Test
    void chatPromptAddsPerMessageTokens() {
        List<ChatMessage> prompt = List.of(ChatMessage.system("Translate to French."), ChatMessage.user("Good morning"));
        assertEquals(TextEstimator.REPLY_PRIMING + 2 * TextEstimator.TOKENS_PER_MESSAGE
                + E.textTokens("Translate to French.") + E.textTokens("Good morning"), E.messageTokens(prompt));
        assertEquals(TextEstimator.REPLY_PRIMING, E.messageTokens(null));
        assertEquals(E, TokenEstimator.approximate());
    }
}
