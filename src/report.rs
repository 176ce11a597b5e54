//! PURE. The static HTML report `git neo report` writes: one self-contained file (no server, no
//! network, no external script or style). The data is embedded as JSON; a small script in the
//! page draws each chart as inline SVG, one `<circle class="pt">` per data point, so a browser
//! (or a test driving a headless one) can count what it drew. Tables under the charts say the
//! same in text, so the page is readable with scripts off too.

use serde::Serialize;

/// One line of a chart: `(x, y)` points, x in seconds since the epoch.
#[derive(Clone, Debug, Serialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<(i64, f64)>,
}

/// A line chart.
#[derive(Clone, Debug, Serialize)]
pub struct Chart {
    /// The `data-chart` attribute of its SVG.
    pub id: String,
    pub title: String,
    pub y_label: String,
    pub series: Vec<Series>,
    /// What the chart says instead of drawing axes when it has no point (why, and what fills it).
    pub empty: String,
    /// The value holds until the next point (a count, a confidence): drawn as steps, not as
    /// diagonals between points.
    pub step: bool,
    /// The top of the y axis when the values have one (a share, a confidence: 1); otherwise the
    /// axis ends at the first tick at or above the largest value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub y_max: Option<f64>,
}

impl Chart {
    /// Points drawn: one circle each.
    pub fn points(&self) -> usize {
        self.series.iter().map(|s| s.points.len()).sum()
    }
}

/// One version in a supersession chain.
#[derive(Clone, Debug, Serialize)]
pub struct Version {
    pub id: String,
    pub at: i64,
    pub subject: String,
    /// Why the next version replaced this one (empty for the last).
    pub reason: String,
}

/// A row of the last curation's table.
#[derive(Clone, Debug, Serialize)]
pub struct CurationRow {
    pub action: String,
    pub id: String,
    pub subject: String,
    pub detail: String,
}

/// Everything the page shows.
#[derive(Clone, Debug, Serialize)]
pub struct ReportData {
    pub title: String,
    pub generated: String,
    /// `label: value` lines at the top.
    pub summary: Vec<(String, String)>,
    pub charts: Vec<Chart>,
    /// Supersession chains, each oldest version first.
    pub chains: Vec<Vec<Version>>,
    /// What the last curation did (`None`: none run in this clone).
    pub curation: Option<(String, Vec<CurationRow>)>,
    /// Lesson patches to the instruction files, newest first: proposed, applied, restored.
    pub lessons: Vec<LessonRow>,
}

/// A row of the lessons table.
#[derive(Clone, Debug, Serialize)]
pub struct LessonRow {
    pub id: String,
    pub file: String,
    pub status: String,
    pub reason: String,
}

/// Text escaped for HTML element content and quoted attributes.
fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// The whole page.
pub fn html(data: &ReportData) -> String {
    // JSON inside a script element: `<` escaped so no text can close the element.
    let json = serde_json::to_string(data).unwrap_or_else(|_| "{}".into()).replace('<', "\\u003c");
    let mut body = String::new();
    body.push_str(&format!(
        "<h1>{}</h1>\n<p class=\"gen\">generated {}</p>\n<dl>",
        esc(&data.title),
        esc(&data.generated)
    ));
    for (k, v) in &data.summary {
        body.push_str(&format!("<dt>{}</dt><dd>{}</dd>", esc(k), esc(v)));
    }
    body.push_str("</dl>\n");
    for c in &data.charts {
        body.push_str(&format!(
            "<section><h2>{}</h2><svg class=\"chart\" data-chart=\"{}\" data-points=\"{}\" viewBox=\"0 0 720 260\" role=\"img\"></svg>\n",
            esc(&c.title),
            esc(&c.id),
            c.points()
        ));
        if c.points() == 0 {
            body.push_str(&format!("<p class=\"empty\">{}</p></section>\n", esc(&c.empty)));
            continue;
        }
        body.push_str("<details><summary>data</summary><table><tr><th>series</th><th>points</th><th>last</th></tr>");
        for s in &c.series {
            let last = s.points.last().map(|p| format!("{:.3}", p.1)).unwrap_or_default();
            body.push_str(&format!("<tr><td>{}</td><td>{}</td><td>{last}</td></tr>", esc(&s.name), s.points.len()));
        }
        body.push_str("</table></details></section>\n");
    }
    body.push_str(&format!(
        "<section><h2>Supersession chains</h2><svg class=\"chart\" data-chart=\"chains\" data-points=\"{}\" viewBox=\"0 0 720 {}\" role=\"img\"></svg>\n<ol>",
        data.chains.iter().map(Vec::len).sum::<usize>(),
        40 + 28 * data.chains.len().max(1)
    ));
    if data.chains.is_empty() {
        body.push_str("</ol><p class=\"empty\">No fact has been replaced yet.</p><ol>");
    }
    for chain in &data.chains {
        let names: Vec<String> = chain.iter().map(|v| esc(&v.subject)).collect();
        body.push_str(&format!("<li>{}</li>", names.join(" &rarr; ")));
    }
    body.push_str("</ol></section>\n<section><h2>Last curation</h2>");
    match &data.curation {
        None => body.push_str("<p>No curation has run in this clone (<code>git neo curate</code>).</p>"),
        // Nothing done: the sentence says so, and no empty table follows it.
        Some((head, rows)) if rows.is_empty() => body.push_str(&format!("<p>{}</p>", esc(head))),
        Some((head, rows)) => {
            body.push_str(&format!(
                "<p>{}</p><table class=\"curation\"><tr><th>action</th><th>id</th><th>fact</th><th>why</th></tr>",
                esc(head)
            ));
            for r in rows {
                body.push_str(&format!(
                    "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td></tr>",
                    esc(&r.action),
                    esc(&r.id),
                    esc(&r.subject),
                    esc(&r.detail)
                ));
            }
            body.push_str("</table>");
        }
    }
    body.push_str("</section>\n<section><h2>Lessons</h2>");
    if data.lessons.is_empty() {
        body.push_str(
            "<p>No lesson has been proposed yet (<code>git neo lesson propose</code>, or curation when a \
             procedure keeps failing).</p>",
        );
    } else {
        body.push_str("<table class=\"curation\"><tr><th>id</th><th>file</th><th>status</th><th>why</th></tr>");
        for l in &data.lessons {
            body.push_str(&format!(
                "<tr><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&l.id),
                esc(&l.file),
                esc(&l.status),
                esc(&l.reason)
            ));
        }
        body.push_str("</table>");
    }
    body.push_str("</section>\n");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<style>{STYLE}</style></head>\n\
         <body>\n{body}<script type=\"application/json\" id=\"neo-data\">{json}</script>\n<script>{SCRIPT}</script>\n</body></html>\n",
        title = esc(&data.title)
    )
}

const STYLE: &str =
    "body{font:14px/1.45 system-ui,sans-serif;max-width:780px;margin:2em auto;color:#222;padding:0 1em;overflow-wrap:anywhere}\
h2{font-size:1.1em;margin-top:2em}.gen{color:#777}dl{display:grid;grid-template-columns:max-content auto;gap:.2em 1em}\
dt{color:#555}dd{margin:0}svg.chart{width:100%;background:#fafafa;border:1px solid #ddd}table{border-collapse:collapse}\
td,th{padding:.2em .6em;border-bottom:1px solid #eee;text-align:left;vertical-align:top}.legend{font-size:11px}.empty{color:#777}\
circle.pt{stroke:#fff;stroke-width:.5}details{overflow-x:auto}th,td:first-child,td:nth-child(2){white-space:nowrap;overflow-wrap:normal}pre{white-space:pre-wrap}";

/// Draws every chart from the embedded data: axes, a polyline and one circle per point for each
/// series; the chains chart, one row per chain with a circle per version.
const SCRIPT: &str = r#"
(function(){
var NS='http://www.w3.org/2000/svg';
var data=JSON.parse(document.getElementById('neo-data').textContent);
var colours=['#1f77b4','#d62728','#2ca02c','#9467bd','#ff7f0e','#8c564b','#e377c2','#17becf','#7f7f7f'];
function el(name,attrs,parent){var e=document.createElementNS(NS,name);for(var k in attrs){e.setAttribute(k,attrs[k]);}if(parent){parent.appendChild(e);}return e;}
function day(t){return new Date(t*1000).toISOString().slice(0,10);}
// X ticks at calendar steps: the smallest of minutes, hours, days, weeks, months or years that
// gives two to seven ticks, each on its boundary (UTC), labelled only as finely as the step needs, so no
// two labels read the same.
var H=3600,D=86400;
var STEPS=[[60,'h'],[300,'h'],[600,'h'],[900,'h'],[1800,'h'],[H,'h'],[2*H,'h'],[3*H,'h'],[6*H,'h'],[12*H,'h'],[D,'d'],[2*D,'d'],[7*D,'d'],[14*D,'d'],[1,'m'],[2,'m'],[3,'m'],[6,'m'],[1,'y'],[2,'y'],[5,'y']];
function ticks(x0,x1){
  for(var k=0;k<STEPS.length;k++){
    var st=STEPS[k],out=[],d=new Date(x0*1000);
    if(st[1]==='h'||st[1]==='d'){var t=Math.ceil(x0/st[0])*st[0];for(;t<=x1;t+=st[0]){out.push(t);}}
    else{
      var y=d.getUTCFullYear(),m=st[1]==='m'?d.getUTCMonth():0,n=st[1]==='m'?st[0]:12*st[0];
      if(st[1]==='y'){y=Math.ceil(y/st[0])*st[0];}
      for(var g=0;g<400;g++){var t2=Date.UTC(y,m+g*n,1)/1000;if(t2<x0){continue;}if(t2>x1){break;}out.push(t2);}
    }
    if(out.length>=2&&out.length<=7){return {at:out,unit:st[1]};}
    if(out.length<2){break;}
  }
  return {at:[x0,x1],unit:x1-x0<2*D?'h':'d'};
}
function label(t,unit){var s=new Date(t*1000).toISOString();
  return unit==='h'?s.slice(5,16).replace('T',' '):unit==='d'?s.slice(0,10):unit==='m'?s.slice(0,7):s.slice(0,4);}
// A "nice" step for about four y ticks (1, 2, 2.5 or 5 times a power of ten), the axis ending at
// the first tick at or above the largest value: a maximum of 52 ends at 60, not 100.
function nicestep(v){if(!(v>0)){return 0.25;}var e=Math.pow(10,Math.floor(Math.log(v)/Math.LN10)),f=v/e+1e-9;return (f<=1?1:f<=2?2:f<=2.5?2.5:f<=5?5:10)*e;}
function num(v){return v>=10?String(Math.round(v)):String(Math.round(v*100)/100);}
// Words in lines of at most n characters (a long word cut), at most `max` lines.
function wrap(s,n,max){var out=[],line='';s.split(/\s+/).forEach(function(w){while(w.length>n){if(line){out.push(line);line='';}out.push(w.slice(0,n));w=w.slice(n);}
  if(!line){line=w;}else if(line.length+1+w.length<=n){line+=' '+w;}else{out.push(line);line=w;}});if(line){out.push(line);}
  if(out.length>max){out=out.slice(0,max);out[max-1]=out[max-1].slice(0,n-1)+'\u2026';}return out;}
data.charts.forEach(function(c){
  var svg=document.querySelector('svg[data-chart="'+c.id+'"]');if(!svg){return;}
  var xs=[],ys=[0];c.series.forEach(function(s){s.points.forEach(function(p){xs.push(p[0]);ys.push(p[1]);});});
  // Nothing to draw: no axes (an empty axis would start in 1970), just what fills the chart.
  // (the paragraph under it says so, scripts on or off).
  if(!xs.length){svg.setAttribute('data-empty','yes');svg.style.display='none';return;}
  var x0=Math.min.apply(null,xs),x1=Math.max.apply(null,xs),ymax=Math.max.apply(null,ys);
  // One moment only: its whole day, the point inside it.
  if(x1===x0){x0=Math.floor(x0/D)*D;x1=x0+D;}
  var ys0=nicestep(ymax/4),y1=Math.max(ys0,Math.ceil(ymax/ys0-1e-9)*ys0);
  if(c.y_max){ys0=c.y_max/4;y1=c.y_max;}
  var L=50,R=540,T=15,B=225;
  function X(v){return L+(v-x0)/(x1-x0)*(R-L);} function Y(v){return B-v/y1*(B-T);}
  el('line',{x1:L,y1:B,x2:R,y2:B,stroke:'#999'},svg);el('line',{x1:L,y1:T,x2:L,y2:B,stroke:'#999'},svg);
  for(var v=0;v<=y1+1e-9;v+=ys0){var t=el('text',{'class':'ylab',x:L-5,y:Y(v)+4,'text-anchor':'end','font-size':10},svg);t.textContent=num(v);
    if(v>0){el('line',{x1:L,y1:Y(v),x2:R,y2:Y(v),stroke:'#eee'},svg);}}
  var tk=ticks(x0,x1);
  tk.at.forEach(function(at){var x=X(at);el('line',{x1:x,y1:B,x2:x,y2:B+4,stroke:'#999'},svg);
    var t=el('text',{'class':'xlab',x:x,y:B+16,'font-size':10,'text-anchor':'middle'},svg);t.textContent=label(at,tk.unit);});
  var t=el('text',{x:12,y:(T+B)/2,'font-size':10,transform:'rotate(-90 12 '+(T+B)/2+')','text-anchor':'middle'},svg);t.textContent=c.y_label;
  var legendY=T+10;
  c.series.forEach(function(s,i){
    var col=colours[i%colours.length];
    // Several points at one moment (recalls of one day) make one point of the line: their median.
    var byX={};s.points.forEach(function(p){(byX[p[0]]=byX[p[0]]||[]).push(p[1]);});
    var line=Object.keys(byX).map(Number).sort(function(a,b){return a-b;}).map(function(x){var v=byX[x].slice().sort(function(a,b){return a-b;});return [x,v[Math.floor((v.length-1)/2)]];});
    if(line.length>1){
      var pts=[];line.forEach(function(p,k){if(c.step&&k>0){pts.push(X(p[0])+','+Y(line[k-1][1]));}pts.push(X(p[0])+','+Y(p[1]));});
      // Series that coincide (three types of five facts each) stay visible: earlier ones are
      // drawn wider and dashed differently, so a later line on top leaves them showing.
      var n=c.series.length,dash=['','6 3','2 3','8 3 2 3'][i%4];
      el('polyline',{'class':c.step?'step':'line',points:pts.join(' '),fill:'none',stroke:col,'stroke-width':1.5+1.5*(n-1-i),'stroke-dasharray':dash,'stroke-opacity':0.85},svg);
    }
    var g=el('g',{'data-series':s.name},svg);
    s.points.forEach(function(p){var d=el('circle',{'class':'pt',cx:X(p[0]),cy:Y(p[1]),r:2.6+1.2*(c.series.length-1-i),fill:col},g);el('title',{},d).textContent=s.name+' '+day(p[0])+': '+p[1];});
    // The legend keeps to the chart's width, wrapped rather than cut; the whole name is its tooltip.
    var lg=el('text',{'class':'legend',x:R+12,y:legendY,fill:col},svg);el('title',{},lg).textContent=s.name;
    wrap(s.name,24,3).forEach(function(part,k){var ts=el('tspan',{x:R+12,dy:k?12:0},lg);ts.textContent=part;legendY+=12;});
    legendY+=4;
  });
});
var svg=document.querySelector('svg[data-chart="chains"]');
if(svg){
  var all=[];data.chains.forEach(function(ch){ch.forEach(function(v){all.push(v.at);});});
  var a0=Math.min.apply(null,all.length?all:[0]),a1=Math.max.apply(null,all.length?all:[1]);if(a1===a0){a1=a0+1;}
  if(!data.chains.length){svg.setAttribute('data-empty','yes');svg.style.display='none';}
  var L=20,R=700,GAP=10;
  data.chains.forEach(function(ch,row){
    var y=30+row*28;
    // By time, but never closer than GAP (versions minutes apart stay apart); a chain that then
    // runs past the edge is spaced evenly by order, with smaller circles when it is long.
    var xs=ch.map(function(v){return L+(v.at-a0)/(a1-a0)*(R-L);});
    for(var i=1;i<xs.length;i++){if(xs[i]<xs[i-1]+GAP){xs[i]=xs[i-1]+GAP;}}
    var r=4;
    if(xs[xs.length-1]>R){var step=(R-L)/Math.max(1,ch.length-1);xs=ch.map(function(v,i){return L+i*step;});r=Math.max(1,Math.min(4,step/2.5));}
    el('line',{x1:xs[0],y1:y,x2:xs[xs.length-1],y2:y,stroke:'#bbb'},svg);
    var g=el('g',{'data-chain':row},svg);
    ch.forEach(function(v,i){var d=el('circle',{'class':'pt',cx:xs[i],cy:y,r:r,fill:i===ch.length-1?'#2ca02c':'#999'},g);el('title',{},d).textContent=day(v.at)+' '+v.subject+(v.reason?' (replaced: '+v.reason+')':'');});
    // The newest subject, kept inside the chart: on the side of its circle with room for it.
    var last=xs[xs.length-1],sub=ch[ch.length-1].subject,label=sub.length>60?sub.slice(0,59)+'\u2026':sub;
    var t=el('text',{'class':'chainlab',x:last,y:y-7,'font-size':10,'text-anchor':last>(L+R)/2?'end':'start'},svg);t.textContent=label;el('title',{},t).textContent=sub;
  });
}
document.body.setAttribute('data-drawn','yes');
// Whether the page fits its window's width (no sideways scrolling), for the browser test.
var root=document.documentElement;document.body.setAttribute('data-fits',root.scrollWidth<=root.clientWidth?'yes':'no');
})();
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_is_self_contained_and_embeds_its_data_safely() {
        let data = ReportData {
            title: "memory of </script><b>x".into(),
            generated: "2026-01-01".into(),
            summary: vec![("facts".into(), "3".into())],
            charts: vec![Chart {
                id: "size".into(),
                title: "Size".into(),
                y_label: "facts".into(),
                y_max: None,
                series: vec![Series { name: "pattern".into(), points: vec![(0, 1.0), (86_400, 2.0)] }],
                empty: "no facts yet".into(),
                step: true,
            }],
            chains: vec![],
            curation: None,
            lessons: Vec::new(),
        };
        let page = html(&data);
        assert!(!page.contains("</script><b>"), "text cannot close a script element");
        assert!(page.contains("data-chart=\"size\" data-points=\"2\""));
        // Nothing fetched: the SVG namespace is an identifier, the only URL in the page.
        assert!(!page.contains("https://"));
        assert_eq!(page.matches("http://").count(), page.matches("http://www.w3.org/2000/svg").count());
        assert!(!page.contains("<script src") && !page.contains("<link"));
    }
}
