import ServiceCard from "../components/ServiceCard.jsx";
import { services } from "../data/services.js";

export default function ServicesPage() {
  return (
    <section>
      <h1>Services &amp; prices</h1>
      <p className="lede">
        All appointments are with a chartered physiotherapist. We can invoice most health insurers directly; please
        bring your authorisation code to your first visit.
      </p>
      <div className="service-grid">
        {services.map((service) => (
          <ServiceCard key={service.id} service={service} />
        ))}
      </div>
      <p className="fine-print">
        Cancellations with less than 24 hours' notice are charged at half the appointment fee.
      </p>
    </section>
  );
}
