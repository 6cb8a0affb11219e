package bank

// families is the registry of verifiable template families. A family serves
// every bucket it lists, at the difficulty the bucket's level selects; the
// pool holds PerFamily items of each (family, bucket). Adding, removing or
// changing a family changes the bank: bump Version (docs/questionbank.md).
var families = []family{
	{name: "arith-expr", task: TaskArithmetic, buckets: all, gen: genArithExpr},
	{name: "arith-shop", task: TaskArithmetic, buckets: all, gen: genArithShop},
	{name: "arith-percent", task: TaskArithmetic, buckets: all, gen: genArithPercent},
	{name: "arith-interest", task: TaskArithmetic, buckets: all, gen: genArithInterest},
	{name: "count-choose", task: TaskArithmetic, buckets: all, gen: genCountChoose},
	{name: "prob-dice", task: TaskArithmetic, buckets: all, gen: genProbDice},
	{name: "clock-angle", task: TaskArithmetic, buckets: all, gen: genClockAngle},
	{name: "number-base", task: TaskArithmetic, buckets: all, gen: genNumberBase},
	{name: "lcm-buses", task: TaskArithmetic, buckets: all, gen: genLCMBuses},
	{name: "remainder", task: TaskArithmetic, buckets: all, gen: genRemainder},
	{name: "gcd-cuts", task: TaskArithmetic, buckets: all, gen: genGCDCuts},
	{name: "weighted-mean", task: TaskArithmetic, buckets: all, gen: genWeightedMean},
	{name: "sequence-term", task: TaskArithmetic, buckets: all, gen: genSequenceTerm},
	{name: "venn-count", task: TaskArithmetic, buckets: all, gen: genVennCount},

	{name: "unit-convert", task: TaskConversion, buckets: all, gen: genUnitConvert},
	{name: "temperature", task: TaskConversion, buckets: all, gen: genTemperature},
	{name: "unit-rate", task: TaskConversion, buckets: all, gen: genUnitRate},
	{name: "roman", task: TaskConversion, buckets: all, gen: genRoman},
	{name: "unit-price", task: TaskConversion, buckets: all, gen: genUnitPrice},

	{name: "date-between", task: TaskDates, buckets: all, gen: genDateBetween},
	{name: "date-add", task: TaskDates, buckets: all, gen: genDateAdd},
	{name: "weekday-offset", task: TaskDates, buckets: all, gen: genWeekdayOffset},
	{name: "date-weekday", task: TaskDates, buckets: all, gen: genDateWeekday},
	{name: "nth-weekday", task: TaskDates, buckets: all, gen: genNthWeekday},
	{name: "age-on-date", task: TaskDates, buckets: all, gen: genAgeOnDate},
	{name: "working-days", task: TaskDates, buckets: all, gen: genWorkingDays},

	{name: "rate-work", task: TaskWordProblem, buckets: all, gen: genRateWork},
	{name: "rate-travel", task: TaskWordProblem, buckets: all, gen: genRateTravel},
	{name: "mixture", task: TaskWordProblem, buckets: all, gen: genMixture},
	{name: "ages", task: TaskWordProblem, buckets: all, gen: genAges},
	{name: "coins", task: TaskWordProblem, buckets: all, gen: genCoins},
	{name: "paint-tins", task: TaskWordProblem, buckets: all, gen: genPaintTins},
	{name: "break-even", task: TaskWordProblem, buckets: all, gen: genBreakEven},

	{name: "knights", task: TaskLogic, buckets: all, gen: genKnights},
	{name: "logic-grid", task: TaskLogic, buckets: all, gen: genGrid},
	{name: "race-order", task: TaskLogic, buckets: all, gen: genRanking},
	{name: "culprit", task: TaskLogic, buckets: all, gen: genCulprit},
	{name: "latin-square", task: TaskLogic, buckets: all, gen: genLatin},

	{name: "path-length", task: TaskPlanning, buckets: all, gen: genPathLength},
	{name: "path-route", task: TaskPlanning, buckets: all, gen: genPathRoute},
	{name: "critical-path", task: TaskPlanning, buckets: all, gen: genCriticalPath},
	{name: "timetable", task: TaskPlanning, buckets: all, gen: genSlots},
	{name: "two-workers", task: TaskPlanning, buckets: all, gen: genTwoWorkers},
	{name: "meetings", task: TaskPlanning, buckets: all, gen: genIntervals},
	{name: "jugs", task: TaskPlanning, buckets: all, gen: genJugs},
	{name: "knapsack", task: TaskPlanning, buckets: all, gen: genKnapsack},
	{name: "coin-change", task: TaskPlanning, buckets: all, gen: genCoinChange},
	{name: "grid-paths", task: TaskPlanning, buckets: all, gen: genGridPaths},
	{name: "rooms", task: TaskPlanning, buckets: all, gen: genRooms},
	{name: "round-trip", task: TaskPlanning, buckets: all, gen: genRoundTrip},
}
