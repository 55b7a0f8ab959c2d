package toolsexample

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nexuskernel/nexus/sdk/toolprovider"
)

var echoSchema = json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","maxLength":4096},"repeat":{"type":"integer","minimum":1,"maximum":5,"default":1},"upper":{"type":"boolean","default":false}},"required":["text"],"additionalProperties":false}`)

var statsSchema = json.RawMessage(`{"type":"object","properties":{"numbers":{"type":"array","items":{"type":"number"},"minItems":1,"maxItems":1000}},"required":["numbers"],"additionalProperties":false}`)

func reportSchema(maxRows int) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"type":"object","properties":{"title":{"type":"string","maxLength":200},"rows":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"},"value":{"type":"number"}},"required":["name","value"],"additionalProperties":false},"minItems":1,"maxItems":%d}},"required":["title","rows"],"additionalProperties":false}`, maxRows))
}

var controlSchema = json.RawMessage(`{"type":"object","properties":{"mode":{"type":"string","enum":["error","failed","sleep"]},"sleep_ms":{"type":"integer","minimum":0,"maximum":600000}},"required":["mode"],"additionalProperties":false}`)

type echoInput struct {
	Text   *string `json:"text"`
	Repeat *int    `json:"repeat"`
	Upper  bool    `json:"upper"`
}

func echo(_ context.Context, call toolprovider.Call) (toolprovider.Result, error) {
	var in echoInput
	if err := call.Decode(&in); err != nil {
		return invalid("%s", decodeReason(err))
	}
	if in.Text == nil {
		return invalid("text is required")
	}
	if n := utf8.RuneCountInString(*in.Text); n > MaxEchoChars {
		return invalid("text has %d characters, more than %d", n, MaxEchoChars)
	}
	repeat := 1
	if in.Repeat != nil {
		repeat = *in.Repeat
	}
	if repeat < 1 || repeat > MaxRepeat {
		return invalid("repeat must be between 1 and %d", MaxRepeat)
	}
	text := *in.Text
	if in.Upper {
		text = strings.ToUpper(text)
	}
	out := strings.TrimSuffix(strings.Repeat(text+"\n", repeat), "\n")
	return toolprovider.Result{
		Text: out,
		Structured: mustJSON(struct {
			Text   string `json:"text"`
			Repeat int    `json:"repeat"`
			Length int    `json:"length"`
		}{out, repeat, utf8.RuneCountInString(out)}),
		Title: fmt.Sprintf("echo (%d×)", repeat),
	}, nil
}

type statsInput struct {
	Numbers *[]float64 `json:"numbers"`
}

func stats(_ context.Context, call toolprovider.Call) (toolprovider.Result, error) {
	var in statsInput
	if err := call.Decode(&in); err != nil {
		return invalid("%s", decodeReason(err))
	}
	if in.Numbers == nil {
		return invalid("numbers is required")
	}
	nums := *in.Numbers
	if len(nums) < 1 || len(nums) > MaxNumbers {
		return invalid("numbers must hold 1 to %d items", MaxNumbers)
	}
	sum, lo, hi := 0.0, math.Inf(1), math.Inf(-1)
	for _, n := range nums {
		sum += n
		lo, hi = math.Min(lo, n), math.Max(hi, n)
	}
	if math.IsInf(sum, 0) {
		return invalid("the sum of numbers is out of range")
	}
	// Structure only: the model reads "" and a client reads the numbers.
	return toolprovider.Result{
		Structured: mustJSON(struct {
			Count int     `json:"count"`
			Sum   float64 `json:"sum"`
			Min   float64 `json:"min"`
			Max   float64 `json:"max"`
			Mean  float64 `json:"mean"`
		}{len(nums), sum, lo, hi, sum / float64(len(nums))}),
		Title: fmt.Sprintf("stats of %d numbers", len(nums)),
	}, nil
}

type reportRow struct {
	Name  *string  `json:"name"`
	Value *float64 `json:"value"`
}

type reportInput struct {
	Title *string      `json:"title"`
	Rows  *[]reportRow `json:"rows"`
}

// reportRef names the report's capture.
const reportRef = "report"

func report(maxRows int) toolprovider.Handler {
	return func(_ context.Context, call toolprovider.Call) (toolprovider.Result, error) {
		var in reportInput
		if err := call.Decode(&in); err != nil {
			return invalid("%s", decodeReason(err))
		}
		switch {
		case in.Title == nil:
			return invalid("title is required")
		case utf8.RuneCountInString(*in.Title) > MaxTitleChars:
			return invalid("title has more than %d characters", MaxTitleChars)
		case in.Rows == nil:
			return invalid("rows is required")
		case len(*in.Rows) < 1 || len(*in.Rows) > maxRows:
			return invalid("rows must hold 1 to %d items", maxRows)
		}
		var buf bytes.Buffer
		w := csv.NewWriter(&buf)
		_ = w.Write([]string{"name", "value"})
		for i, r := range *in.Rows {
			if r.Name == nil || r.Value == nil {
				return invalid("rows[%d] needs a name and a value", i)
			}
			_ = w.Write([]string{*r.Name, strconv.FormatFloat(*r.Value, 'g', -1, 64)})
		}
		w.Flush()
		data := buf.Bytes()
		n := len(*in.Rows)
		return toolprovider.Result{
			Blocks: []toolprovider.Block{
				toolprovider.TextBlock(fmt.Sprintf("Report %s: %d rows.", *in.Title, n)),
				toolprovider.LinkBlock(toolprovider.ResourceLink{
					URI: toolprovider.CaptureURI(reportRef), Name: "report.csv", MimeType: "text/csv",
					Size: int64(len(data)), Title: *in.Title,
				}),
			},
			Structured: mustJSON(struct {
				Rows  int `json:"rows"`
				Bytes int `json:"bytes"`
			}{n, len(data)}),
			Captures: []toolprovider.Capture{{Ref: reportRef, Filename: "report.csv", Data: data}},
		}, nil
	}
}

type controlInput struct {
	Mode    *string `json:"mode"`
	SleepMS *int64  `json:"sleep_ms"`
}

func control(ctx context.Context, call toolprovider.Call) (toolprovider.Result, error) {
	var in controlInput
	if err := call.Decode(&in); err != nil {
		return invalid("%s", decodeReason(err))
	}
	if in.Mode == nil {
		return invalid("mode is required")
	}
	var sleep time.Duration
	if in.SleepMS != nil {
		if *in.SleepMS < 0 || *in.SleepMS > MaxSleep.Milliseconds() {
			return invalid("sleep_ms must be between 0 and %d", MaxSleep.Milliseconds())
		}
		sleep = time.Duration(*in.SleepMS) * time.Millisecond
	}
	switch *in.Mode {
	case "error":
		return toolprovider.Result{Text: FailureText, IsError: true}, nil
	case "failed":
		return toolprovider.Result{Failed: true, FailureDetail: FailureText}, nil
	case "sleep":
		t := time.NewTimer(sleep)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		return toolprovider.Result{Text: "slept"}, nil
	}
	return invalid("mode must be error, failed or sleep")
}
