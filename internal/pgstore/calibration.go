package pgstore

import (
	"context"
	"fmt"
)

// StoredAnswer is one baseline answer a finished batch stored: the
// bank question it answers and its text.
type StoredAnswer struct {
	BatchID    string
	QuestionID string
	// Engine is the engine that answered: the batch's baseline.
	Engine string
	Text   string
}

// baselineAnswersSQL reads the baseline answers of complete batches of a
// bank version, optionally of one baseline engine ($2, "" for any), in
// batch then question order.
const baselineAnswersSQL = `
SELECT b.id::text, q.question_id, coalesce(q.baseline_answer->>'engine', ''), coalesce(q.baseline_answer->>'text', '')
  FROM batches b JOIN batch_questions q ON q.batch_id = b.id
 WHERE b.status = 'complete' AND b.bank_version = $1 AND q.baseline_answer IS NOT NULL
   AND ($2 = '' OR q.baseline_answer->>'engine' = $2)
 ORDER BY b.created_at, b.id, q.index`

// BaselineAnswers returns the baseline answers stored by every complete
// batch of the bank version — of every organisation: it is an operator's
// read, for calibrating the bank (core/bench/bank.Calibrate) — limited to
// one baseline engine unless engine is "".
func (s *Store) BaselineAnswers(ctx context.Context, bankVersion, engine string) ([]StoredAnswer, error) {
	rows, err := s.pool.Query(ctx, baselineAnswersSQL, bankVersion, engine)
	if err != nil {
		return nil, fmt.Errorf("reading baseline answers: %w", err)
	}
	defer rows.Close()
	var out []StoredAnswer
	for rows.Next() {
		var a StoredAnswer
		if err := rows.Scan(&a.BatchID, &a.QuestionID, &a.Engine, &a.Text); err != nil {
			return nil, fmt.Errorf("reading baseline answers: %w", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading baseline answers: %w", err)
	}
	return out, nil
}
