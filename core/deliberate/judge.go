package deliberate

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
)

// judged is the reading of one round.
type judged struct {
	by              string
	round           int
	best            *seatOutcome
	bestScore       *float64
	scores          map[string]float64 // by seat role
	divergence      *float64
	converged       *bool
	factualConflict bool
	passage         *ContestedPassage
	why             string // why the heuristic ran
}

func (j *judged) summary() *Judgment {
	return &Judgment{By: j.by, Best: j.best.role, Scores: j.scores, Divergence: j.divergence, Converged: j.converged, FactualConflict: j.factualConflict}
}

func (j *judged) rationale(rounds int) string {
	if j.by == JudgedByLLM {
		return fmt.Sprintf("%s scored highest with the judge (%.2f of 1) in round %d of %d.", j.best.role, *j.bestScore, j.round, rounds)
	}
	if len(j.scores) == 1 {
		return fmt.Sprintf("%s was the only seat to answer in round %d, and no judge verdict was readable.", j.best.role, j.round)
	}
	return fmt.Sprintf("No judge verdict was readable, so %s won as the medoid: its answer shares the most words with the others (mean overlap %.2f).", j.best.role, j.scores[j.best.role])
}

// judge reads a round: the protocol's prompts to the judge staff engine,
// shuffled and anonymised answers; the medoid heuristic when no verdict is
// readable.
func (r *run) judge(ctx context.Context, n int, answers []*seatOutcome, seed int64, res *Result) (*judged, error) {
	order := shuffled(len(answers), seed)
	task := &core.JudgeTask{Question: question(r.req.Messages), Seed: seed}
	byID := map[string]*seatOutcome{}
	for k, i := range order {
		id := string(rune('A' + k))
		byID[id] = answers[i]
		task.Answers = append(task.Answers, core.JudgeAnswer{ID: id, Text: answers[i].text})
	}
	why := ""
	plan, err := r.e.cfg.Judge.Plan(ctx, task)
	if err != nil {
		why = "the judging protocol could not plan: " + err.Error()
	} else {
		verdicts := &core.JudgeVerdicts{Task: *task}
		for _, p := range plan.Prompts {
			sreq := &core.SeatRequest{System: p.System, Messages: []core.Message{{Role: core.RoleUser, Content: p.User}}, JSONOutput: p.JSONOutput, MaxTokens: r.e.cfg.SeatMaxTokens}
			ans, _, fail := r.staffCall(ctx, RoleJudge, n, sreq)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if ans == nil {
				why = fail
				continue
			}
			verdicts.Verdicts = append(verdicts.Verdicts, core.JudgeVerdict{PromptID: p.ID, Judge: "judge-1", Text: ans.Text})
		}
		if len(verdicts.Verdicts) > 0 {
			sc, err := r.e.cfg.Judge.Score(ctx, verdicts)
			switch {
			case err != nil:
				why = "the judging protocol could not score: " + err.Error()
			case sc.Best == "" || byID[sc.Best] == nil:
				why = "the judge's verdict was unreadable"
			default:
				j := &judged{by: JudgedByLLM, round: n, best: byID[sc.Best], scores: map[string]float64{}, divergence: sc.Divergence, converged: sc.Converged, factualConflict: sc.FactualConflict}
				for id, v := range sc.Scores {
					if o := byID[id]; o != nil {
						j.scores[o.role] = v
					}
				}
				bs := sc.Scores[sc.Best]
				j.bestScore = &bs
				if p := sc.ContestedPassage; p != nil && byID[p.Answer] != nil {
					j.passage = &ContestedPassage{Seat: byID[p.Answer].role, Quote: p.Quote, Why: p.Why}
				}
				return j, nil
			}
		}
	}
	if why != "" && !hasStaff(res.StaffUnavailable, RoleJudge) {
		res.StaffUnavailable = append(res.StaffUnavailable, core.Unavailable{Role: RoleJudge, Reason: why + "; the heuristic chose the best seat"})
	}
	return medoid(n, answers, why), nil
}

func hasStaff(list []core.Unavailable, role string) bool {
	for _, u := range list {
		if u.Role == role {
			return true
		}
	}
	return false
}

// medoid picks the answer with the highest mean token-set (Jaccard)
// similarity to the others; ties go to the earlier seat.
func medoid(n int, answers []*seatOutcome, why string) *judged {
	sets := make([]map[string]bool, len(answers))
	for i, a := range answers {
		sets[i] = tokenSet(a.text)
	}
	j := &judged{by: JudgedByHeuristic, round: n, scores: map[string]float64{}, why: why}
	bestMean := -1.0
	for i, a := range answers {
		mean := 1.0
		if len(answers) > 1 {
			sum := 0.0
			for k := range answers {
				if k != i {
					sum += jaccard(sets[i], sets[k])
				}
			}
			mean = round3(sum / float64(len(answers)-1))
		}
		j.scores[a.role] = mean
		if mean > bestMean {
			bestMean, j.best = mean, a
		}
	}
	return j
}

func tokenSet(s string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		set[w] = true
	}
	return set
}

func jaccard(a, b map[string]bool) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

// parseClassification reads the first JSON object in text that has a
// numeric "score" in [0, 1]. The depth is the score's band, so an engine and
// the heuristic always agree on the scale.
func parseClassification(text string) (*classify.Result, bool) {
	for i, tries := 0, 0; tries < 16; tries++ {
		k := strings.IndexByte(text[i:], '{')
		if k < 0 {
			return nil, false
		}
		i += k
		var v struct {
			Score             *float64 `json:"score"`
			TaskType          string   `json:"task_type"`
			HallucinationRisk string   `json:"hallucination_risk"`
		}
		if json.NewDecoder(strings.NewReader(text[i:])).Decode(&v) == nil && v.Score != nil && *v.Score >= 0 && *v.Score <= 1 {
			res := &classify.Result{Score: round3(*v.Score), TaskType: v.TaskType, HallucinationRisk: v.HallucinationRisk}
			res.Depth = classify.DepthFor(res.Score)
			if res.TaskType == "" {
				res.TaskType = classify.TaskOpenQuestion
			}
			switch res.HallucinationRisk {
			case "low", "medium", "high":
			default:
				res.HallucinationRisk = "medium"
			}
			return res, true
		}
		i++
	}
	return nil, false
}
