package org.albertedge.core;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.json.JSONObject;
import org.junit.jupiter.api.Test;

/**
 * NER and QA windows under RoBERTa's and XLM-R's {@code <s>} template equal Python's runtime: every record of
 * golden_bpe_windows.jsonl (bpe.json) and golden_xlmr_windows.jsonl (xlmr_spiece.model), written by
 * {@code python -m albert_edge.android.family_windows} from the runtime's own window builders with seeded
 * logits, is tokenized, windowed, decoded and cut back to characters here as in {@link EntityGoldenTest}
 * and {@link QuestionAnswererGoldenTest}.
 */
class TemplateWindowsGoldenTest {
    private static TextTokenizer bpe() throws Exception {
        return ByteLevelBpeTokenizer.fromAssetBytes(Resources.bytes("bpe.json"), "bpe.json");
    }

    private static TextTokenizer xlmr() throws Exception {
        return SentencePieceTokenizer.fromModelBytes(Resources.bytes("xlmr_spiece.model"), false, "xlmr_spiece.model");
    }

    private static List<JSONObject> records(String file, String task) throws Exception {
        List<JSONObject> out = new ArrayList<JSONObject>();
        for (JSONObject g : Resources.jsonLines(file)) {
            if (task.equals(g.getString("task"))) {
                out.add(g);
            }
        }
        assertTrue(out.size() >= 20, file + ": " + out.size() + " " + task + " records");
        return out;
    }

    private static void checkNer(TextTokenizer tokenizer, String file) throws Exception {
        List<JSONObject> golden = records(file, "ner");
        EntityGoldenTest.checkAll(tokenizer, Resources.strings(golden.get(0).getJSONArray("labels")), golden, 200, 15);
    }

    @Test
    void robertaNerWindowsTagsAndEntitiesMatchPython() throws Exception {
        checkNer(bpe(), "golden_bpe_windows.jsonl");
    }

    @Test
    void xlmrNerWindowsTagsAndEntitiesMatchPython() throws Exception {
        checkNer(xlmr(), "golden_xlmr_windows.jsonl");
    }

    @Test
    void robertaQaWindowsAndAnswersMatchPython() throws Exception {
        QuestionAnswererGoldenTest.checkAll(bpe(), records("golden_bpe_windows.jsonl", "qa"), 15, 15, 1);
    }

    @Test
    void xlmrQaWindowsAndAnswersMatchPython() throws Exception {
        QuestionAnswererGoldenTest.checkAll(xlmr(), records("golden_xlmr_windows.jsonl", "qa"), 15, 15, 1);
    }

    @Test
    void theQaRowHoldsTwoSeparatorsAfterTheQuestionAndTypeZeroThroughout() throws Exception {
        TextTokenizer tok = bpe();
        QuestionAnswerer.Prepared p = new QuestionAnswerer(tok, 32, -1, 30, -1).prepare("a b", "c d e");
        Encoding e = p.encodings.get(0);
        List<String> q = tok.tokenize("a b");
        List<String> want = new ArrayList<String>();
        want.add("<s>");
        want.addAll(q);
        want.addAll(Arrays.asList("</s>", "</s>"));
        want.addAll(tok.tokenize("c d e"));
        want.add("</s>");
        assertEquals(want, e.tokens);
        assertEquals(q.size() + 3, p.windows.get(0).offset);
        assertEquals(tok.sepId(), e.inputIds[q.size() + 1]);
        assertEquals(tok.sepId(), e.inputIds[q.size() + 2]);
        assertArrayEquals(new int[e.length()], e.tokenTypeIds);
    }

    @Test
    void theSecondSeparatorCountsAgainstTheQuestionCapAndStride() throws Exception {
        TextTokenizer tok = xlmr();
        // max_seq_len 10: <s> + 5 question tokens + </s></s> + </s> leaves 1 context token with XLM-R's
        // template, 2 with BERT's; a sixth question token leaves none.
        new QuestionAnswerer(tok, 10, -1, 30, 5);
        AlbertCoreException noContext = assertThrows(AlbertCoreException.class,
                () -> new QuestionAnswerer(tok, 10, -1, 30, 6));
        assertTrue(noContext.getMessage().contains("leaves no context"), noContext.getMessage());
        AlbertCoreException stride = assertThrows(AlbertCoreException.class,
                () -> new QuestionAnswerer(tok, 12, 3, 30, 5));
        assertTrue(stride.getMessage().startsWith("stride 3: expected an int in [0, 3)"), stride.getMessage());
    }
}
