package dev.layover.samples.translate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.layover.testing.PureTest;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The JSON repair helper: what it strips, and what it refuses. */
@PureTest
class JsonRepairTest {

    private static final String JSON = "{\"segments\":[\"Bonjour\",\"Merci {beaucoup}\"]}";

    @Test
    void plainJsonIsReadAsIs() throws Exception {
        assertEquals(List.of("Bonjour", "Merci {beaucoup}"), TranslationAnswer.read(JSON, "stop", 2));
    }

    @Test
    void aCodeFenceIsStripped() throws Exception {
        assertEquals(List.of("Bonjour", "Merci {beaucoup}"), TranslationAnswer.read("```json\n" + JSON + "\n```", "stop", 2));
        assertEquals(List.of("Bonjour", "Merci {beaucoup}"),
                TranslationAnswer.read("Here you go:\n```\n" + JSON + "\n```\nAnything else?", "stop", 2));
    }

    @Test
    void proseAroundTheJsonIsStripped() throws Exception {
        String chatty = "Sure! Here is the translation you asked for:\n\n" + JSON + "\n\nLet me know if you need anything else.";
        assertEquals(List.of("Bonjour", "Merci {beaucoup}"), TranslationAnswer.read(chatty, "stop", 2));
    }

    @Test
    void bracesInProseBeforeTheJsonAreSkipped() throws Exception {
        String chatty = "I kept {placeholders} as they were: " + JSON;
        assertEquals(List.of("Bonjour", "Merci {beaucoup}"), TranslationAnswer.read(chatty, null, 2));
    }

    @Test
    void bracesAndQuotesInsideStringsDoNotConfuseIt() throws Exception {
        String tricky = "{\"segments\":[\"a \\\"quoted\\\" } brace\",\"[x]\"]} trailing words";
        assertEquals(List.of("a \"quoted\" } brace", "[x]"), TranslationAnswer.read(tricky, "stop", 2));
    }

    @Test
    void aCutOffAnswerIsRefusedByItsFinishReason() {
        UnusableAnswerException e = assertThrows(UnusableAnswerException.class,
                () -> TranslationAnswer.read(JSON, "length", 2));
        assertTrue(e.truncated());
        assertTrue(e.getMessage().contains("finish_reason: length"), e.getMessage());
    }

    @Test
    void unbalancedJsonIsRefusedEvenWithoutAFinishReason() {
        String half = JSON.substring(0, JSON.length() / 2);
        UnusableAnswerException e = assertThrows(UnusableAnswerException.class, () -> TranslationAnswer.read(half, "stop", 2));
        assertTrue(e.truncated(), e.getMessage());
    }

    @Test
    void aCutOffAnswerIsNotRescuedByAnInnerObject() {
        // the first object never closes; the inner {"b":1} balances, but it is a fragment
        UnusableAnswerException e = assertThrows(UnusableAnswerException.class,
                () -> JsonRepair.parse("{\"a\":{\"b\":1},\"segments\":[\"x", "stop"));
        assertTrue(e.truncated());
    }

    @Test
    void aFenceThatNeverClosesIsRefusedAsTruncated() {
        UnusableAnswerException e = assertThrows(UnusableAnswerException.class,
                () -> TranslationAnswer.read("```json\n{\"segments\":[\"Bonjour\"", "stop", 1));
        assertTrue(e.truncated());
    }

    @Test
    void anAnswerWithoutJsonIsRefused() {
        UnusableAnswerException e = assertThrows(UnusableAnswerException.class,
                () -> TranslationAnswer.read("I am sorry, I cannot translate that.", "stop", 1));
        assertFalse(e.truncated());
        assertThrows(UnusableAnswerException.class, () -> TranslationAnswer.read("", "stop", 1));
        assertThrows(UnusableAnswerException.class, () -> TranslationAnswer.read("{not: json}", "stop", 1));
    }

    @Test
    void aMissingSegmentIsRefused() {
        UnusableAnswerException e = assertThrows(UnusableAnswerException.class,
                () -> TranslationAnswer.read("{\"segments\":[\"Bonjour\",\"Merci\"]}", "stop", 3));
        assertFalse(e.truncated());
        assertEquals("segment 3 of 3 is missing from the answer (2 came back)", e.getMessage());
    }

    @Test
    void aBlankOrNonTextSegmentCountsAsMissing() {
        assertThrows(UnusableAnswerException.class, () -> TranslationAnswer.read("{\"segments\":[\"Bonjour\",\" \"]}", "stop", 2));
        assertThrows(UnusableAnswerException.class, () -> TranslationAnswer.read("{\"segments\":[\"Bonjour\",null]}", "stop", 2));
        assertThrows(UnusableAnswerException.class, () -> TranslationAnswer.read("{\"translations\":[\"Bonjour\"]}", "stop", 1));
    }

    @Test
    void anExtraSegmentIsRefused() {
        assertThrows(UnusableAnswerException.class, () -> TranslationAnswer.read("{\"segments\":[\"a\",\"b\"]}", "stop", 1));
    }
}
